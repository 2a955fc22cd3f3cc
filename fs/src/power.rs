//! [`PowerLossFs`]: an in-memory file system that loses, at a simulated
//! machine crash, what was not synced.
//!
//! Per file it keeps the current bytes, the bytes at its last sync, and
//! the writes since; per directory, its current entries and its entries
//! at its last sync. [`PowerLossFs::crash`] puts every file back to its
//! synced bytes (or tears its last unsynced write at a sector boundary)
//! and every directory back to its synced entries, then forgets what no
//! synced directory reaches: a file created (or renamed, or removed) in a
//! directory that was not synced since is as it was before.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::sync::{Arc, Mutex};
use crate::{EntryKind, File, FileSystem, OpenOptions};

/// The sector size a torn write is cut at ([`Crash::TearLastWrite`]).
pub const SECTOR: u64 = 512;

/// What a simulated crash keeps of what was not synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Crash {
    /// Nothing: every file is as at its last sync, every directory as at
    /// its last sync.
    LoseUnsynced,
    /// Each file keeps its unsynced writes but the last, and of the last
    /// only the sectors up to the one holding its middle byte (a write the
    /// device was partway through); directories as at their last sync.
    TearLastWrite,
}

type Ino = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    File(Ino),
    Dir(Ino),
}

#[derive(Debug)]
enum Change {
    Write { offset: u64, bytes: Vec<u8> },
    SetLen(u64),
}

#[derive(Debug, Default)]
struct FileNode {
    data: Vec<u8>,
    synced: Vec<u8>,
    /// Changes since the last sync, oldest first.
    unsynced: Vec<Change>,
}

#[derive(Debug, Default)]
struct DirNode {
    entries: BTreeMap<OsString, Node>,
    durable: BTreeMap<OsString, Node>,
}

#[derive(Debug)]
struct State {
    files: HashMap<Ino, FileNode>,
    dirs: HashMap<Ino, DirNode>,
    next: Ino,
    /// Bumped by each crash: handles opened before one fail.
    generation: u64,
    /// Bytes the files may hold in all (`None`: unlimited).
    capacity: Option<u64>,
}

const ROOT: Ino = 0;

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", path.display()),
    )
}

/// The path's names from the root; `..` is refused.
fn names(path: &Path) -> io::Result<Vec<OsString>> {
    let mut out = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n.to_os_string()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{}: `..` is not supported", path.display()),
                ));
            }
        }
    }
    Ok(out)
}

impl State {
    fn new() -> Self {
        let mut dirs = HashMap::new();
        dirs.insert(ROOT, DirNode::default());
        State {
            files: HashMap::new(),
            dirs,
            next: ROOT + 1,
            generation: 0,
            capacity: None,
        }
    }

    /// Bytes of the files the directories list now (a removed file's
    /// bytes are free, though a crash may bring the file back).
    fn used(&self) -> u64 {
        let mut seen = HashSet::new();
        let mut total = 0;
        let mut stack = vec![ROOT];
        while let Some(d) = stack.pop() {
            let Some(dir) = self.dirs.get(&d) else {
                continue;
            };
            for node in dir.entries.values() {
                match *node {
                    Node::Dir(c) => stack.push(c),
                    Node::File(f) if seen.insert(f) => {
                        total += self.files.get(&f).map_or(0, |f| f.data.len() as u64);
                    }
                    Node::File(_) => {}
                }
            }
        }
        total
    }

    /// The node at `names`.
    fn lookup(&self, names: &[OsString]) -> Option<Node> {
        let mut node = Node::Dir(ROOT);
        for name in names {
            let Node::Dir(d) = node else { return None };
            node = *self.dirs.get(&d)?.entries.get(name)?;
        }
        Some(node)
    }

    /// The directory holding `path`'s last name, and that name.
    fn parent(&self, path: &Path) -> io::Result<(Ino, OsString)> {
        let mut names = names(path)?;
        let Some(last) = names.pop() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: the root has no parent", path.display()),
            ));
        };
        match self.lookup(&names) {
            Some(Node::Dir(d)) => Ok((d, last)),
            Some(Node::File(_)) => Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{}: a parent is a file", path.display()),
            )),
            None => Err(not_found(path)),
        }
    }

    fn entries_mut(&mut self, dir: Ino) -> &mut BTreeMap<OsString, Node> {
        &mut self.dirs.entry(dir).or_default().entries
    }

    fn fits(&self, growth: u64, path: &Path) -> io::Result<()> {
        match self.capacity {
            Some(cap) if self.used().saturating_add(growth) > cap => {
                let os = io::Error::from_raw_os_error(28);
                Err(io::Error::new(
                    os.kind(),
                    format!("{}: {os} (capacity {cap} bytes)", path.display()),
                ))
            }
            _ => Ok(()),
        }
    }

    fn crash(&mut self, how: Crash) {
        self.generation += 1;
        for f in self.files.values_mut() {
            let unsynced = std::mem::take(&mut f.unsynced);
            f.data = f.synced.clone();
            if how == Crash::TearLastWrite {
                let n = unsynced.len();
                for (i, change) in unsynced.into_iter().enumerate() {
                    match change {
                        Change::SetLen(len) if i + 1 < n => {
                            f.data.resize(usize::try_from(len).unwrap_or(usize::MAX), 0);
                        }
                        Change::SetLen(_) => {}
                        Change::Write { offset, bytes } => {
                            let keep = if i + 1 < n {
                                bytes.len()
                            } else {
                                // Up to the sector holding the middle byte.
                                let middle = offset + bytes.len() as u64 / 2;
                                let cut = (middle / SECTOR + 1) * SECTOR;
                                usize::try_from(cut.saturating_sub(offset))
                                    .unwrap_or(usize::MAX)
                                    .min(bytes.len())
                            };
                            apply_write(&mut f.data, offset, &bytes[..keep]);
                        }
                    }
                }
            }
            // What survived is on the device now.
            f.synced = f.data.clone();
        }
        for d in self.dirs.values_mut() {
            d.entries = d.durable.clone();
        }
        // Forget what no synced directory reaches.
        let mut live_dirs = HashSet::new();
        let mut live_files = HashSet::new();
        let mut stack = vec![ROOT];
        while let Some(d) = stack.pop() {
            if !live_dirs.insert(d) {
                continue;
            }
            if let Some(dir) = self.dirs.get(&d) {
                for node in dir.entries.values() {
                    match *node {
                        Node::Dir(c) => stack.push(c),
                        Node::File(f) => {
                            live_files.insert(f);
                        }
                    }
                }
            }
        }
        self.dirs.retain(|d, _| live_dirs.contains(d));
        self.files.retain(|f, _| live_files.contains(f));
    }
}

fn apply_write(data: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    let end = start.saturating_add(bytes.len());
    if data.len() < end {
        data.resize(end, 0);
    }
    data[start..end].copy_from_slice(bytes);
}

/// An in-memory file system that simulates a machine crash
/// ([`crash`](Self::crash)).
///
/// Per file it keeps the current bytes, the bytes at its last sync, and
/// the writes since; per directory, its current entries and its entries
/// at its last sync. A crash puts every file back to its synced bytes (or
/// tears its last unsynced write at a sector boundary) and every directory
/// back to its synced entries, then forgets what no synced directory
/// reaches: a file created (or renamed, or removed) in a directory not
/// synced since is as it was before.
///
/// It can also be given a capacity ([`set_capacity`](Self::set_capacity)),
/// past which writes fail as on a full disk (`ENOSPC`), to test a full
/// disk and the space coming back.
#[derive(Clone)]
pub struct PowerLossFs {
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for PowerLossFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("PowerLossFs")
            .field("files", &st.files.len())
            .field("dirs", &st.dirs.len())
            .field("crashes", &st.generation)
            .finish()
    }
}

impl Default for PowerLossFs {
    fn default() -> Self {
        PowerLossFs::new()
    }
}

impl PowerLossFs {
    /// An empty file system: only the root directory.
    pub fn new() -> Self {
        PowerLossFs {
            state: Arc::new(Mutex::new(State::new())),
        }
    }

    /// Simulates a machine crash: see [`Crash`]. Files opened before it
    /// fail every call afterwards (reopen them, as a restarted process
    /// would).
    pub fn crash(&self, how: Crash) {
        self.state.lock().crash(how);
    }

    /// Limits what the files may hold in all to `bytes` (`None`: no
    /// limit). A write or `set_len` that would go past it fails with
    /// `ENOSPC` and changes nothing.
    pub fn set_capacity(&self, bytes: Option<u64>) {
        self.state.lock().capacity = bytes;
    }

    /// Bytes the files hold now.
    pub fn used(&self) -> u64 {
        self.state.lock().used()
    }

    /// Bytes written since their file's last sync, over every file a
    /// crash may leave (removed files whose removal is not synced yet
    /// included).
    pub fn unsynced_bytes(&self) -> u64 {
        let st = self.state.lock();
        st.files
            .values()
            .flat_map(|f| &f.unsynced)
            .map(|c| match c {
                Change::Write { bytes, .. } => bytes.len() as u64,
                Change::SetLen(_) => 0,
            })
            .sum()
    }
}

/// A file of a [`PowerLossFs`].
struct MemFile {
    state: Arc<Mutex<State>>,
    path: PathBuf,
    ino: Ino,
    writable: bool,
    generation: u64,
}

impl fmt::Debug for MemFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemFile").field("path", &self.path).finish()
    }
}

impl MemFile {
    /// Runs `f` on the file's node, if the file system did not crash since
    /// the file was opened.
    fn with<T>(&self, f: impl FnOnce(&mut State, Ino) -> io::Result<T>) -> io::Result<T> {
        let mut st = self.state.lock();
        if st.generation != self.generation {
            return Err(io::Error::other(format!(
                "{}: opened before a simulated crash; reopen it",
                self.path.display()
            )));
        }
        if !st.files.contains_key(&self.ino) {
            return Err(not_found(&self.path));
        }
        f(&mut st, self.ino)
    }

    fn writable(&self) -> io::Result<()> {
        if self.writable {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{}: opened read-only", self.path.display()),
            ))
        }
    }
}

impl File for MemFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.with(|st, ino| {
            let data = &st.files[&ino].data;
            let start = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(data.len());
            let n = buf.len().min(data.len() - start);
            buf[..n].copy_from_slice(&data[start..start + n]);
            Ok(n)
        })
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.writable()?;
        self.with(|st, ino| {
            let len = st.files[&ino].data.len() as u64;
            let growth = (offset + buf.len() as u64).saturating_sub(len);
            st.fits(growth, &self.path)?;
            let f = st.files.get_mut(&ino).expect("checked by with");
            apply_write(&mut f.data, offset, buf);
            f.unsynced.push(Change::Write {
                offset,
                bytes: buf.to_vec(),
            });
            Ok(buf.len())
        })
    }

    fn len(&self) -> io::Result<u64> {
        self.with(|st, ino| Ok(st.files[&ino].data.len() as u64))
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.writable()?;
        self.with(|st, ino| {
            let now = st.files[&ino].data.len() as u64;
            st.fits(len.saturating_sub(now), &self.path)?;
            let f = st.files.get_mut(&ino).expect("checked by with");
            f.data.resize(usize::try_from(len).unwrap_or(usize::MAX), 0);
            f.unsynced.push(Change::SetLen(len));
            Ok(())
        })
    }

    fn sync_data(&self) -> io::Result<()> {
        self.with(|st, ino| {
            let f = st.files.get_mut(&ino).expect("checked by with");
            f.synced = f.data.clone();
            f.unsynced.clear();
            Ok(())
        })
    }

    fn sync_all(&self) -> io::Result<()> {
        self.sync_data()
    }
}

impl FileSystem for PowerLossFs {
    fn open(&self, path: &Path, options: &OpenOptions) -> io::Result<Box<dyn File>> {
        let mut st = self.state.lock();
        let (dir, name) = st.parent(path)?;
        let existing = st.dirs[&dir].entries.get(&name).copied();
        let ino = match existing {
            Some(Node::Dir(_)) => {
                return Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    format!("{}: is a directory", path.display()),
                ));
            }
            Some(Node::File(_)) if options.create_new => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{}: already exists", path.display()),
                ));
            }
            Some(Node::File(ino)) => {
                if options.truncate && options.write {
                    let f = st.files.get_mut(&ino).expect("a listed file exists");
                    f.data.clear();
                    f.unsynced.push(Change::SetLen(0));
                }
                ino
            }
            None if options.create || options.create_new => {
                let ino = st.next;
                st.next += 1;
                st.files.insert(ino, FileNode::default());
                st.entries_mut(dir).insert(name, Node::File(ino));
                ino
            }
            None => return Err(not_found(path)),
        };
        Ok(Box::new(MemFile {
            state: Arc::clone(&self.state),
            path: path.to_path_buf(),
            ino,
            writable: options.write,
            generation: st.generation,
        }))
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        let (dir, name) = st.parent(path)?;
        if st.dirs[&dir].entries.contains_key(&name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{}: already exists", path.display()),
            ));
        }
        let ino = st.next;
        st.next += 1;
        st.dirs.insert(ino, DirNode::default());
        st.entries_mut(dir).insert(name, Node::Dir(ino));
        Ok(())
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut prefix = PathBuf::from("/");
        for name in names(path)? {
            prefix.push(&name);
            match self.kind(&prefix)? {
                Some(EntryKind::Dir) => {}
                Some(EntryKind::File) => {
                    return Err(io::Error::new(
                        io::ErrorKind::NotADirectory,
                        format!("{}: is a file", prefix.display()),
                    ));
                }
                None => self.create_dir(&prefix)?,
            }
        }
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        let (from_dir, from_name) = st.parent(from)?;
        let (to_dir, to_name) = st.parent(to)?;
        let node = *st.dirs[&from_dir]
            .entries
            .get(&from_name)
            .ok_or_else(|| not_found(from))?;
        match (node, st.dirs[&to_dir].entries.get(&to_name)) {
            (_, Some(Node::Dir(d))) if !st.dirs[d].entries.is_empty() => {
                return Err(io::Error::new(
                    io::ErrorKind::DirectoryNotEmpty,
                    format!("{}: a directory that is not empty", to.display()),
                ));
            }
            (Node::File(_), Some(Node::Dir(_))) => {
                return Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    format!("{}: is a directory", to.display()),
                ));
            }
            (Node::Dir(_), Some(Node::File(_))) => {
                return Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    format!("{}: is a file", to.display()),
                ));
            }
            _ => {}
        }
        st.entries_mut(from_dir).remove(&from_name);
        st.entries_mut(to_dir).insert(to_name, node);
        Ok(())
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        let (from_dir, from_name) = st.parent(from)?;
        let (to_dir, to_name) = st.parent(to)?;
        let node = match st.dirs[&from_dir].entries.get(&from_name) {
            Some(Node::File(f)) => Node::File(*f),
            Some(Node::Dir(_)) => {
                return Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    format!("{}: is a directory", from.display()),
                ));
            }
            None => return Err(not_found(from)),
        };
        if st.dirs[&to_dir].entries.contains_key(&to_name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{}: already exists", to.display()),
            ));
        }
        st.entries_mut(to_dir).insert(to_name, node);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        let (dir, name) = st.parent(path)?;
        match st.dirs[&dir].entries.get(&name) {
            Some(Node::File(_)) => {
                // The node stays while a synced directory may still list
                // it (a crash brings it back); the next crash forgets it.
                st.entries_mut(dir).remove(&name);
                Ok(())
            }
            Some(Node::Dir(_)) => Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{}: is a directory", path.display()),
            )),
            None => Err(not_found(path)),
        }
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        let (dir, name) = st.parent(path)?;
        match st.dirs[&dir].entries.get(&name).copied() {
            Some(Node::Dir(d)) if st.dirs[&d].entries.is_empty() => {
                st.entries_mut(dir).remove(&name);
                Ok(())
            }
            Some(Node::Dir(_)) => Err(io::Error::new(
                io::ErrorKind::DirectoryNotEmpty,
                format!("{}: not empty", path.display()),
            )),
            Some(Node::File(_)) => Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{}: is a file", path.display()),
            )),
            None => Err(not_found(path)),
        }
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let st = self.state.lock();
        match st.lookup(&names(path)?) {
            Some(Node::Dir(d)) => Ok(st.dirs[&d]
                .entries
                .keys()
                .map(|name| path.join(name))
                .collect()),
            Some(Node::File(_)) => Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{}: is a file", path.display()),
            )),
            None => Err(not_found(path)),
        }
    }

    fn kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        let st = self.state.lock();
        Ok(st.lookup(&names(path)?).map(|n| match n {
            Node::File(_) => EntryKind::File,
            Node::Dir(_) => EntryKind::Dir,
        }))
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        match st.lookup(&names(path)?) {
            Some(Node::Dir(d)) => {
                let dir = st.dirs.get_mut(&d).expect("a listed directory exists");
                dir.durable = dir.entries.clone();
                Ok(())
            }
            Some(Node::File(_)) => Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{}: is a file", path.display()),
            )),
            None => Err(not_found(path)),
        }
    }

    fn free_space(&self, _path: &Path) -> io::Result<u64> {
        let st = self.state.lock();
        Ok(st
            .capacity
            .map_or(u64::MAX, |cap| cap.saturating_sub(st.used())))
    }
}
