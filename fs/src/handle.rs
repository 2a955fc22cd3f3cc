//! [`FsHandle`]: the file system a crate's options carry.

use std::fmt;
use std::ops::Deref;

use crate::sync::Arc;
use crate::{FileSystem, RealFs};

/// The file system an engine's options carry: the real one by default, or
/// any other (a [`FaultFs`](crate::FaultFs) or a
/// [`PowerLossFs`](crate::PowerLossFs) in tests). Cheap to clone; derefs
/// to the [`FileSystem`]. Two handles are equal when both are the real
/// file system or both share one file system.
///
/// ```
/// use std::sync::Arc;
///
/// use fs::{FsHandle, PowerLossFs};
///
/// assert_eq!(FsHandle::default(), FsHandle::real());
/// let disk = FsHandle::new(Arc::new(PowerLossFs::new()));
/// assert_eq!(disk.clone(), disk);
/// assert_ne!(disk, FsHandle::real());
/// ```
#[derive(Clone, Default)]
pub struct FsHandle(Inner);

#[derive(Clone, Default)]
enum Inner {
    #[default]
    Real,
    Shared(Arc<dyn FileSystem>),
}

/// The real file system every default handle derefs to.
static REAL: RealFs = RealFs;

impl FsHandle {
    /// The real file system ([`RealFs`]).
    pub fn real() -> Self {
        FsHandle(Inner::Real)
    }

    /// A handle on `fs`.
    pub fn new(fs: Arc<dyn FileSystem>) -> Self {
        FsHandle(Inner::Shared(fs))
    }

    /// Whether this is the real file system.
    pub fn is_real(&self) -> bool {
        matches!(self.0, Inner::Real)
    }
}

impl Deref for FsHandle {
    type Target = dyn FileSystem;

    fn deref(&self) -> &Self::Target {
        match &self.0 {
            Inner::Real => &REAL,
            Inner::Shared(fs) => &**fs,
        }
    }
}

impl From<Arc<dyn FileSystem>> for FsHandle {
    fn from(fs: Arc<dyn FileSystem>) -> Self {
        FsHandle::new(fs)
    }
}

impl PartialEq for FsHandle {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Inner::Real, Inner::Real) => true,
            (Inner::Shared(a), Inner::Shared(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for FsHandle {}

impl fmt::Debug for FsHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Inner::Real => f.write_str("FsHandle(RealFs)"),
            Inner::Shared(fs) => f.debug_tuple("FsHandle").field(fs).finish(),
        }
    }
}
