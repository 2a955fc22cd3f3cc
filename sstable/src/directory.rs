//! File naming, generation numbers, and the directory-level half of the
//! atomic commit: finding committed sstables and removing what unfinished
//! writes left behind.
//!
//! A component of generation `N` lives in `sst-N-<Component>` (for example
//! `sst-7-Data.db`). While it is being written it is `sst-N-<Component>.tmp`,
//! and the whole write is marked by `sst-N-TemporaryTOC.txt`, created
//! exclusively when the writer starts (this reserves `N`) and renamed to
//! `sst-N-TOC.txt` as the very last step of a commit. An sstable exists
//! exactly when its `TOC.txt` does.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use fs::{FileSystem, FsHandle, OpenOptions};

use crate::error::{Component, Error, io_err};

const PREFIX: &str = "sst-";
const TEMPORARY_TOC: &str = "TemporaryTOC.txt";
const TMP_SUFFIX: &str = ".tmp";

/// Path of a committed component.
pub fn component_path(dir: &Path, generation: u64, component: Component) -> PathBuf {
    dir.join(format!("{PREFIX}{generation}-{}", component.file_suffix()))
}

/// Path of a component while it is being written.
pub(crate) fn temp_path(dir: &Path, generation: u64, component: Component) -> PathBuf {
    dir.join(format!(
        "{PREFIX}{generation}-{}{TMP_SUFFIX}",
        component.file_suffix()
    ))
}

/// Path of the marker of an unfinished write, renamed to the TOC at commit.
pub(crate) fn temporary_toc_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{PREFIX}{generation}-{TEMPORARY_TOC}"))
}

/// What a file name in an sstable directory means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileKind {
    Committed(Component),
    Temporary,
    TemporaryToc,
}

/// Parses `sst-<generation>-<rest>`; `None` for files that are not ours.
fn parse_name(name: &str) -> Option<(u64, FileKind)> {
    let rest = name.strip_prefix(PREFIX)?;
    let (generation, suffix) = rest.split_once('-')?;
    if generation.is_empty() || !generation.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let generation: u64 = generation.parse().ok()?;
    let kind = if suffix == TEMPORARY_TOC {
        FileKind::TemporaryToc
    } else if let Some(base) = suffix.strip_suffix(TMP_SUFFIX) {
        Component::from_file_suffix(base)?;
        FileKind::Temporary
    } else {
        FileKind::Committed(Component::from_file_suffix(suffix)?)
    };
    Some((generation, kind))
}

/// Whether `name` is the name of a file an sstable writer creates in its
/// directory: a component (`sst-7-Data.db`), a component being written
/// (`sst-7-Data.db.tmp`) or the marker of an unfinished write
/// (`sst-7-TemporaryTOC.txt`). Owners of a directory use it to remove
/// only the sstables' files and leave anything else alone.
///
/// ```
/// assert!(sstable::is_sstable_file_name("sst-7-Data.db"));
/// assert!(sstable::is_sstable_file_name("sst-7-TemporaryTOC.txt"));
/// assert!(!sstable::is_sstable_file_name("sst-x-Data.db"));
/// assert!(!sstable::is_sstable_file_name("notes.txt"));
/// ```
pub fn is_sstable_file_name(name: &str) -> bool {
    parse_name(name).is_some()
}

/// Parses the generation and component out of a committed component's path
/// (`.../sst-7-Data.db` gives `(7, Data)`).
pub fn parse_component_path(path: &Path) -> Result<(u64, Component), Error> {
    let bad = || Error::BadFileName {
        path: path.to_path_buf(),
    };
    let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(bad)?;
    match parse_name(name) {
        Some((generation, FileKind::Committed(c))) => Ok((generation, c)),
        _ => Err(bad()),
    }
}

/// Every sstable file in `dir`, grouped by generation.
fn scan(fs: &dyn FileSystem, dir: &Path) -> Result<BTreeMap<u64, Vec<(String, FileKind)>>, Error> {
    let mut by_generation: BTreeMap<u64, Vec<(String, FileKind)>> = BTreeMap::new();
    for entry in fs.read_dir(dir).map_err(io_err("read directory", dir))? {
        let Some(name) = entry.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if let Some((generation, kind)) = parse_name(name) {
            by_generation
                .entry(generation)
                .or_default()
                .push((name.to_owned(), kind));
        }
    }
    Ok(by_generation)
}

/// fsyncs a directory so renames and creations in it are durable.
pub(crate) fn sync_dir(fs: &dyn FileSystem, dir: &Path) -> Result<(), Error> {
    fs.sync_dir(dir).map_err(io_err("fsync directory", dir))
}

/// Reserves a fresh generation in `dir` by exclusively creating its
/// TemporaryTOC marker. Returns the generation and the marker's path.
///
/// The candidate is one more than the largest generation of any sstable
/// file present, or `floor` if that is larger. `create_new` makes two writers (threads or processes)
/// that pick the same candidate collide on the marker, and the loser moves
/// on. A writer that committed `N` renamed its marker to the TOC, so after
/// winning the marker we also check that no TOC of `N` exists: at every
/// moment after a writer reserves `N`, either its marker or its TOC exists.
pub(crate) fn reserve_generation(
    fs: &dyn FileSystem,
    dir: &Path,
    floor: u64,
) -> Result<(u64, PathBuf), Error> {
    let mut candidate = scan(fs, dir)?
        .keys()
        .next_back()
        .map_or(1, |g| g.saturating_add(1))
        .max(floor);
    loop {
        if candidate == u64::MAX {
            return Err(Error::InvalidOption {
                name: "generation",
                value: candidate.to_string(),
                expected: "a directory whose generations are below u64::MAX",
            });
        }
        let marker = temporary_toc_path(dir, candidate);
        match fs.open(&marker, &OpenOptions::create_new()) {
            Ok(_) => {
                let toc = component_path(dir, candidate, Component::Toc);
                if fs.kind(&toc).map_err(io_err("stat", &toc))?.is_some() {
                    fs.remove_file(&marker).map_err(io_err("remove", &marker))?;
                } else {
                    return Ok((candidate, marker));
                }
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_err("create", &marker)(e)),
        }
        candidate += 1;
    }
}

/// Removes every file of generation `generation` except its TOC, then the TOC
/// marker last; used by abort and by leftover cleanup.
pub(crate) fn remove_unfinished_generation(
    fs: &dyn FileSystem,
    dir: &Path,
    generation: u64,
) -> Result<(), Error> {
    for component in Component::ALL {
        for path in [
            temp_path(dir, generation, component),
            component_path(dir, generation, component),
        ] {
            if component == Component::Toc && path == component_path(dir, generation, component) {
                continue;
            }
            match fs.remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(io_err("remove", &path)(e)),
            }
        }
    }
    let marker = temporary_toc_path(dir, generation);
    match fs.remove_file(&marker) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err("remove", &marker)(e)),
    }
}

/// Removes the committed sstable `generation` of `dir` on `fs`: its TOC
/// first (then the directory is synced, so the sstable is no longer
/// committed even after a machine crash), then every other file of the
/// generation, then the directory is synced again. For a writer's owner
/// that cannot use an sstable it just committed (it failed to open it) and
/// must not leave it to be found at the next start. Missing files are
/// fine.
///
/// # Errors
/// [`Error::Io`] naming the file or directory that could not be removed
/// or synced.
pub fn remove_committed(fs: &FsHandle, dir: &Path, generation: u64) -> Result<(), Error> {
    let fs: &dyn FileSystem = &**fs;
    let toc = component_path(dir, generation, Component::Toc);
    match fs.remove_file(&toc) {
        Ok(()) => sync_dir(fs, dir)?,
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("remove", &toc)(e)),
    }
    remove_unfinished_generation(fs, dir, generation)?;
    sync_dir(fs, dir)
}

/// An sstable directory: the committed sstables in it, after removing the
/// leftovers of writes that never committed.
#[derive(Debug, Clone)]
pub struct SstableDirectory {
    path: PathBuf,
    generations: Vec<u64>,
    removed: Vec<u64>,
}

impl SstableDirectory {
    /// Opens `path`, removes every file of a generation that has no
    /// `TOC.txt` (an aborted or crashed write), removes stray temporary
    /// files of committed generations, fsyncs the directory, and lists the
    /// committed generations.
    ///
    /// Call this when no writer is active in the directory (at startup):
    /// an in-progress write looks exactly like a crashed one.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::open_with(path, &FsHandle::real())
    }

    /// As [`open`](Self::open), on the file system `fs`.
    pub fn open_with(path: impl AsRef<Path>, fs: &FsHandle) -> Result<Self, Error> {
        let fs: &dyn FileSystem = &**fs;
        let path = path.as_ref().to_path_buf();
        let mut generations = Vec::new();
        let mut removed = Vec::new();
        let mut changed = false;
        for (generation, files) in scan(fs, &path)? {
            let committed = files
                .iter()
                .any(|(_, k)| *k == FileKind::Committed(Component::Toc));
            if committed {
                for (name, kind) in &files {
                    if matches!(kind, FileKind::Temporary | FileKind::TemporaryToc) {
                        let p = path.join(name);
                        fs.remove_file(&p).map_err(io_err("remove", &p))?;
                        changed = true;
                    }
                }
                generations.push(generation);
            } else {
                remove_unfinished_generation(fs, &path, generation)?;
                removed.push(generation);
                changed = true;
            }
        }
        if changed {
            sync_dir(fs, &path)?;
        }
        Ok(SstableDirectory {
            path,
            generations,
            removed,
        })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Committed generations, ascending.
    pub fn generations(&self) -> &[u64] {
        &self.generations
    }

    /// Generations whose unfinished files `open` removed.
    pub fn removed_leftovers(&self) -> &[u64] {
        &self.removed
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use super::*;

    fn reserve(dir: &Path, floor: u64) -> u64 {
        reserve_generation(&fs::RealFs, dir, floor).unwrap().0
    }

    #[test]
    fn names_parse() {
        assert_eq!(
            parse_name("sst-12-Data.db"),
            Some((12, FileKind::Committed(Component::Data)))
        );
        assert_eq!(
            parse_name("sst-3-TOC.txt"),
            Some((3, FileKind::Committed(Component::Toc)))
        );
        assert_eq!(
            parse_name("sst-3-Index.db.tmp"),
            Some((3, FileKind::Temporary))
        );
        assert_eq!(
            parse_name("sst-3-TemporaryTOC.txt"),
            Some((3, FileKind::TemporaryToc))
        );
        assert_eq!(parse_name("sst--Data.db"), None);
        assert_eq!(parse_name("sst-x-Data.db"), None);
        assert_eq!(parse_name("sst-1-Other.db"), None);
        assert_eq!(parse_name("notes.txt"), None);
        assert!(parse_component_path(Path::new("/a/sst-9-Filter.db")).is_ok());
        assert!(parse_component_path(Path::new("/a/sst-9-Filter.db.tmp")).is_err());
    }

    #[test]
    fn reservations_never_collide_with_markers_or_tocs() {
        let dir = tempfile::tempdir().unwrap();
        let a = reserve(dir.path(), 1);
        let b = reserve(dir.path(), 1);
        assert_eq!((a, b), (1, 2));
        // A committed TOC at 3 without any marker: next is 4.
        File::create(component_path(dir.path(), 3, Component::Toc)).unwrap();
        assert_eq!(reserve(dir.path(), 1), 4);
        // A floor above what is present wins; below it, the directory does.
        assert_eq!(reserve(dir.path(), 10), 10);
        assert_eq!(reserve(dir.path(), 2), 11);
    }

    #[test]
    fn open_removes_unfinished_generations_only() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for c in Component::ALL {
            File::create(component_path(d, 1, c)).unwrap();
        }
        File::create(temp_path(d, 1, Component::Data)).unwrap();
        File::create(temp_path(d, 2, Component::Data)).unwrap();
        File::create(component_path(d, 2, Component::Index)).unwrap();
        File::create(temporary_toc_path(d, 2)).unwrap();
        File::create(d.join("unrelated")).unwrap();
        let s = SstableDirectory::open(d).unwrap();
        assert_eq!(s.generations(), &[1]);
        assert_eq!(s.removed_leftovers(), &[2]);
        let mut names: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names.len(), Component::ALL.len() + 1);
        assert!(names.contains(&"unrelated".to_owned()));
        assert!(!names.iter().any(|n| n.ends_with(".tmp")));
    }
}
