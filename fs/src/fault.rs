//! [`FaultFs`]: a file system that fails chosen calls of another.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::sync::{Arc, Mutex};
use crate::{EntryKind, File, FileSystem, OpenOptions};

/// A kind of call, as [`FaultFs`] counts and fails them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Op {
    /// Opening a file that exists, without creating it.
    Open,
    /// Opening a file that may be created (`create` or `create_new`).
    Create,
    /// A positional read.
    Read,
    /// A positional write.
    Write,
    /// Setting a file's length.
    SetLen,
    /// `sync_data` or `sync_all` of a file.
    Sync,
    /// Syncing a directory.
    SyncDir,
    /// A rename.
    Rename,
    /// A hard link.
    Link,
    /// Removing a file or a directory.
    Remove,
    /// Creating a directory (`create_dir`, `create_dir_all`).
    CreateDir,
    /// Listing a directory.
    ReadDir,
}

impl Op {
    /// Every kind, in order.
    pub const ALL: [Op; 12] = [
        Op::Open,
        Op::Create,
        Op::Read,
        Op::Write,
        Op::SetLen,
        Op::Sync,
        Op::SyncDir,
        Op::Rename,
        Op::Link,
        Op::Remove,
        Op::CreateDir,
        Op::ReadDir,
    ];

    fn index(self) -> usize {
        Op::ALL.iter().position(|&o| o == self).unwrap_or(0)
    }
}

/// The error a fault injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultError {
    /// An I/O error (`EIO`).
    Io,
    /// A full disk (`ENOSPC`, [`io::ErrorKind::StorageFull`]).
    NoSpace,
    /// A write that wrote the first half of its buffer, then failed with
    /// `EIO` (a torn write); on calls other than writes, as [`Io`](Self::Io).
    ShortWrite,
}

impl FaultError {
    fn to_io(self, op: Op, path: &Path) -> io::Error {
        let code = match self {
            FaultError::NoSpace => 28,
            FaultError::Io | FaultError::ShortWrite => 5,
        };
        let os = io::Error::from_raw_os_error(code);
        io::Error::new(
            os.kind(),
            format!("injected fault on {op:?} of {}: {os}", path.display()),
        )
    }
}

/// Which calls a fault fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRule {
    op: Op,
    nth: Option<u64>,
    path_contains: Option<String>,
    error: FaultError,
    /// Once matched, every later call of any kind fails too.
    dies: bool,
}

impl FaultRule {
    /// Fails the `n`th call of kind `op` (counted from 1, since the file
    /// system was made or its counts were reset), once.
    pub fn nth(op: Op, n: u64, error: FaultError) -> Self {
        FaultRule {
            op,
            nth: Some(n),
            path_contains: None,
            error,
            dies: false,
        }
    }

    /// Fails the `n`th call of kind `op` and, from then on, every call of
    /// every kind until the rules are cleared: a disk (or machine) that
    /// died at that call. With a [`PowerLossFs`](crate::PowerLossFs)
    /// underneath, crashing it afterwards gives what a machine crash at
    /// that call leaves.
    pub fn dies_at(op: Op, n: u64, error: FaultError) -> Self {
        FaultRule {
            dies: true,
            ..FaultRule::nth(op, n, error)
        }
    }

    /// Fails every call of kind `op` (until the rule is cleared).
    pub fn every(op: Op, error: FaultError) -> Self {
        FaultRule {
            op,
            nth: None,
            path_contains: None,
            error,
            dies: false,
        }
    }

    /// Only calls on a path containing `pattern` fail. An `nth` rule still
    /// counts every call of its kind: it fails the `n`th call if that
    /// call's path matches.
    pub fn on_paths(mut self, pattern: impl Into<String>) -> Self {
        self.path_contains = Some(pattern.into());
        self
    }

    fn matches(&self, op: Op, count: u64, path: &Path) -> bool {
        self.op == op
            && self.nth.is_none_or(|n| n == count)
            && self
                .path_contains
                .as_deref()
                .is_none_or(|p| path.to_string_lossy().contains(p))
    }
}

#[derive(Debug, Default)]
struct State {
    calls: [u64; Op::ALL.len()],
    rules: Vec<FaultRule>,
    injected: u64,
    /// Set once a [`FaultRule::dies_at`] rule matched: every call fails.
    dead: Option<FaultError>,
}

#[derive(Debug)]
struct Shared {
    inner: Arc<dyn FileSystem>,
    state: Mutex<State>,
}

impl Shared {
    /// Counts a call of `op` on `path`; the error to inject, if a rule
    /// matches.
    fn call(&self, op: Op, path: &Path) -> Option<FaultError> {
        let mut st = self.state.lock();
        let i = op.index();
        st.calls[i] += 1;
        let count = st.calls[i];
        let rule = st
            .rules
            .iter()
            .find(|r| r.matches(op, count, path))
            .map(|r| (r.error, r.dies));
        let error = match (st.dead, rule) {
            (Some(dead), _) => Some(dead),
            (None, Some((error, dies))) => {
                if dies {
                    st.dead = Some(error);
                }
                Some(error)
            }
            (None, None) => None,
        };
        if error.is_some() {
            st.injected += 1;
        }
        error
    }

    fn check(&self, op: Op, path: &Path) -> io::Result<()> {
        match self.call(op, path) {
            Some(e) => Err(e.to_io(op, path)),
            None => Ok(()),
        }
    }
}

/// A file system that passes every call to another and fails the ones
/// its [`FaultRule`]s match, counting the calls of each [`Op`].
///
/// ```
/// use std::path::Path;
/// use std::sync::Arc;
///
/// use fs::{FaultError, FaultFs, FaultRule, FileSystem, Op, OpenOptions, PowerLossFs};
///
/// let disk = FaultFs::new(Arc::new(PowerLossFs::new()));
/// disk.add_rule(FaultRule::nth(Op::Write, 2, FaultError::NoSpace))?;
/// let f = disk.open(Path::new("/a"), &OpenOptions::create_new())?;
/// f.write_all_at(b"one", 0)?;
/// let e = f.write_all_at(b"two", 3).unwrap_err();
/// assert_eq!(e.kind(), std::io::ErrorKind::StorageFull);
/// f.write_all_at(b"two", 3)?; // the third write
/// assert_eq!((disk.calls(Op::Write), disk.injected()), (3, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct FaultFs {
    shared: Arc<Shared>,
}

impl FaultFs {
    /// Wraps `inner`, failing nothing until a rule is added.
    pub fn new(inner: Arc<dyn FileSystem>) -> Self {
        FaultFs {
            shared: Arc::new(Shared {
                inner,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Adds `rule`: from now on, the calls it matches fail.
    ///
    /// # Errors
    /// [`Error::InvalidRule`] for an `nth` rule with `n == 0` (calls count
    /// from 1) or an empty path pattern.
    pub fn add_rule(&self, rule: FaultRule) -> Result<(), Error> {
        if rule.nth == Some(0) {
            return Err(Error::InvalidRule {
                rule: format!("{rule:?}"),
                reason: "calls are counted from 1".to_owned(),
            });
        }
        if rule.path_contains.as_deref() == Some("") {
            return Err(Error::InvalidRule {
                rule: format!("{rule:?}"),
                reason: "an empty path pattern matches every path; use a rule without one"
                    .to_owned(),
            });
        }
        self.shared.state.lock().rules.push(rule);
        Ok(())
    }

    /// Removes every rule: nothing fails from now on.
    pub fn clear_rules(&self) {
        let mut st = self.shared.state.lock();
        st.rules.clear();
        st.dead = None;
    }

    /// Whether a [`FaultRule::dies_at`] rule has fired (every call fails
    /// until the rules are cleared).
    pub fn is_dead(&self) -> bool {
        self.shared.state.lock().dead.is_some()
    }

    /// Calls of kind `op` so far (failed ones included).
    pub fn calls(&self, op: Op) -> u64 {
        self.shared.state.lock().calls[op.index()]
    }

    /// Sets every call count back to 0 (the `n` of [`FaultRule::nth`]
    /// counts from here).
    pub fn reset_counts(&self) {
        self.shared.state.lock().calls = [0; Op::ALL.len()];
    }

    /// Faults injected so far.
    pub fn injected(&self) -> u64 {
        self.shared.state.lock().injected
    }
}

/// A file of a [`FaultFs`].
struct FaultFile {
    shared: Arc<Shared>,
    path: PathBuf,
    inner: Box<dyn File>,
}

impl fmt::Debug for FaultFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultFile")
            .field("path", &self.path)
            .finish()
    }
}

impl File for FaultFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.shared.check(Op::Read, &self.path)?;
        self.inner.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        match self.shared.call(Op::Write, &self.path) {
            None => self.inner.write_at(buf, offset),
            Some(FaultError::ShortWrite) => {
                // Half of it reaches the file, then the device fails.
                let half = buf.len() / 2;
                if half > 0 {
                    self.inner.write_all_at(&buf[..half], offset)?;
                }
                Err(FaultError::ShortWrite.to_io(Op::Write, &self.path))
            }
            Some(e) => Err(e.to_io(Op::Write, &self.path)),
        }
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.shared.check(Op::SetLen, &self.path)?;
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.shared.check(Op::Sync, &self.path)?;
        self.inner.sync_data()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.shared.check(Op::Sync, &self.path)?;
        self.inner.sync_all()
    }

    // Hints pass through uncounted: failing one changes nothing a caller
    // relies on.
    fn start_writeback(&self, offset: u64, len: u64) -> io::Result<()> {
        self.inner.start_writeback(offset, len)
    }

    fn drop_cached(&self, offset: u64, len: u64) -> io::Result<()> {
        self.inner.drop_cached(offset, len)
    }

    fn advise_random(&self) -> io::Result<()> {
        self.inner.advise_random()
    }

    fn reopen_direct(&self) -> io::Result<Option<Box<dyn File>>> {
        self.shared.check(Op::Open, &self.path)?;
        Ok(self.inner.reopen_direct()?.map(|inner| {
            Box::new(FaultFile {
                shared: Arc::clone(&self.shared),
                path: self.path.clone(),
                inner,
            }) as Box<dyn File>
        }))
    }

    fn try_lock(&self) -> io::Result<bool> {
        self.inner.try_lock()
    }

    fn identity(&self) -> io::Result<Option<(u64, u64)>> {
        self.inner.identity()
    }
}

impl FileSystem for FaultFs {
    fn open(&self, path: &Path, options: &OpenOptions) -> io::Result<Box<dyn File>> {
        let op = if options.create || options.create_new {
            Op::Create
        } else {
            Op::Open
        };
        self.shared.check(op, path)?;
        let inner = self.shared.inner.open(path, options)?;
        Ok(Box::new(FaultFile {
            shared: Arc::clone(&self.shared),
            path: path.to_path_buf(),
            inner,
        }))
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.shared.check(Op::CreateDir, path)?;
        self.shared.inner.create_dir(path)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.shared.check(Op::CreateDir, path)?;
        self.shared.inner.create_dir_all(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.shared.check(Op::Rename, from)?;
        self.shared.inner.rename(from, to)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.shared.check(Op::Link, to)?;
        self.shared.inner.hard_link(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.shared.check(Op::Remove, path)?;
        self.shared.inner.remove_file(path)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.shared.check(Op::Remove, path)?;
        self.shared.inner.remove_dir(path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        self.shared.check(Op::ReadDir, path)?;
        self.shared.inner.read_dir(path)
    }

    fn kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        self.shared.inner.kind(path)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.shared.check(Op::SyncDir, path)?;
        self.shared.inner.sync_dir(path)
    }

    fn free_space(&self, path: &Path) -> io::Result<u64> {
        self.shared.inner.free_space(path)
    }
}
