//! The crate's synchronisation primitives: the workspace's `sync` facade.
//! The file systems' shared state is held in std `Arc`s (`plain`): it is
//! handed across the public API as `Arc<dyn FileSystem>`.

pub(crate) use ::sync::Mutex;
pub(crate) use ::sync::plain::Arc;
