//! Chunked byte strings: values and keys longer than the largest object
//! (ScyllaDB's `managed_bytes`).

use std::cmp::Ordering;
use std::fmt;

use crate::{Error, Handle};

/// A byte string stored in a region, of any length up to
/// [`ManagedBytes::max_len`]: one object when it fits the pool's largest
/// object, otherwise chunks of the largest object size plus an index object
/// listing their handles. It is `Copy` and 16 bytes: the head handle and the
/// length, so it can be embedded in other objects
/// ([`to_bytes`](Self::to_bytes), [`from_bytes`](Self::from_bytes)).
///
/// Create one with [`RegionWriter::alloc_managed`](crate::RegionWriter::alloc_managed),
/// read it with [`RegionReader::managed`](crate::RegionReader::managed),
/// free it with [`RegionWriter::free_managed`](crate::RegionWriter::free_managed).
///
/// ```
/// use logalloc::{PoolConfig, Region, SegmentPool};
///
/// let pool = SegmentPool::new(PoolConfig::default().with_memory_limit(16 << 20))?;
/// let mut region = Region::new(&pool);
/// let big = vec![7u8; 1 << 20]; // far above the largest object
/// let stored = region.writer().alloc_managed(&big)?;
/// {
///     let reader = region.reader();
///     let value = reader.managed(stored)?;
///     assert_eq!(value.len(), big.len());
///     assert!(value.chunk_count() > 1);
///     assert_eq!(value.cmp_bytes(&big), std::cmp::Ordering::Equal); // no copy
/// }
/// region.writer().free_managed(stored)?;
/// assert_eq!(region.stats().objects, 0);
/// # Ok::<(), logalloc::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ManagedBytes {
    head: Handle,
    len: u64,
}

impl fmt::Debug for ManagedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagedBytes")
            .field("head", &self.head)
            .field("len", &self.len)
            .finish()
    }
}

impl ManagedBytes {
    /// Size of the [`to_bytes`](Self::to_bytes) encoding.
    pub const ENCODED_LEN: usize = 16;

    pub(crate) fn new(head: Handle, len: usize) -> ManagedBytes {
        ManagedBytes {
            head,
            len: len as u64,
        }
    }

    /// The longest string a pool whose largest object is `max_object`
    /// bytes can hold: as many full chunks as the index object has room for
    /// handles.
    pub fn max_len(max_object: usize) -> usize {
        (max_object / 8).saturating_mul(max_object)
    }

    /// The string's length in bytes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The handle of the object holding the bytes (short strings) or the
    /// chunk index (long ones).
    pub fn head(&self) -> Handle {
        self.head
    }

    /// Whether the string is split into chunks in a pool whose largest
    /// object is `max_object` bytes.
    pub fn is_chunked(&self, max_object: usize) -> bool {
        self.len() > max_object
    }

    /// The 16-byte little-endian encoding: head handle, then length.
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.head.to_raw().to_le_bytes());
        out[8..].copy_from_slice(&self.len.to_le_bytes());
        out
    }

    /// Decodes [`to_bytes`](Self::to_bytes); `None` if the head is not a
    /// handle (zero).
    pub fn from_bytes(bytes: [u8; 16]) -> Option<ManagedBytes> {
        let (head, len) = bytes.split_at(8);
        let head = Handle::from_raw(u64::from_le_bytes(head.try_into().ok()?))?;
        let len = u64::from_le_bytes(len.try_into().ok()?);
        Some(ManagedBytes { head, len })
    }
}

/// A borrowed view of a [`ManagedBytes`] string: its chunks, in order,
/// under the region lock of the reader or writer it came from.
///
/// Short strings (one object) are viewed without any heap allocation; a
/// chunked string keeps a small list of its chunk slices.
#[derive(Clone)]
pub struct ManagedRef<'a> {
    repr: Repr<'a>,
    len: usize,
}

#[derive(Clone)]
enum Repr<'a> {
    Single(&'a [u8]),
    Chunked(Vec<&'a [u8]>),
}

impl fmt::Debug for ManagedRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagedRef")
            .field("len", &self.len)
            .field("chunks", &self.chunk_count())
            .finish()
    }
}

impl<'a> ManagedRef<'a> {
    pub(crate) fn index_handles(index: &[u8]) -> Result<Vec<Handle>, Error> {
        if !index.len().is_multiple_of(8) {
            return Err(Error::MalformedManaged { len: index.len() });
        }
        index
            .chunks_exact(8)
            .map(|raw| {
                let raw = u64::from_le_bytes(raw.try_into().expect("8-byte chunk"));
                Handle::from_raw(raw).ok_or(Error::MalformedManaged { len: index.len() })
            })
            .collect()
    }

    pub(crate) fn resolve(
        bytes: ManagedBytes,
        max_object: usize,
        get: impl Fn(Handle) -> Result<&'a [u8], Error>,
    ) -> Result<ManagedRef<'a>, Error> {
        let head = get(bytes.head)?;
        if !bytes.is_chunked(max_object) {
            if head.len() != bytes.len() {
                return Err(Error::MalformedManaged { len: head.len() });
            }
            return Ok(ManagedRef {
                repr: Repr::Single(head),
                len: bytes.len(),
            });
        }
        let handles = Self::index_handles(head)?;
        let mut chunks = Vec::with_capacity(handles.len());
        let mut total = 0;
        for h in handles {
            let chunk = get(h)?;
            total += chunk.len();
            chunks.push(chunk);
        }
        if total != bytes.len() {
            return Err(Error::MalformedManaged { len: head.len() });
        }
        Ok(ManagedRef {
            repr: Repr::Chunked(chunks),
            len: bytes.len(),
        })
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many chunks the string is stored in (1 for a short string).
    pub fn chunk_count(&self) -> usize {
        match &self.repr {
            Repr::Single(_) => 1,
            Repr::Chunked(c) => c.len(),
        }
    }

    /// The chunks, in order.
    pub fn chunks(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        let (single, many): (Option<&'a [u8]>, &[&'a [u8]]) = match &self.repr {
            Repr::Single(s) => (Some(*s), &[]),
            Repr::Chunked(c) => (None, c.as_slice()),
        };
        single.into_iter().chain(many.iter().copied())
    }

    /// The bytes as one slice when the string is a single object.
    pub fn as_contiguous(&self) -> Option<&'a [u8]> {
        match &self.repr {
            Repr::Single(s) => Some(s),
            Repr::Chunked(_) => None,
        }
    }

    /// Compares the string bytewise with `other`, without copying it out.
    pub fn cmp_bytes(&self, other: &[u8]) -> Ordering {
        let mut rest = other;
        for chunk in self.chunks() {
            let n = chunk.len().min(rest.len());
            match chunk[..n].cmp(&rest[..n]) {
                Ordering::Equal => {}
                unequal => return unequal,
            }
            if n < chunk.len() {
                return Ordering::Greater; // `other` ran out first
            }
            rest = &rest[n..];
        }
        if rest.is_empty() {
            Ordering::Equal
        } else {
            Ordering::Less
        }
    }

    /// Compares two strings bytewise, chunk boundaries notwithstanding.
    pub fn cmp_managed(&self, other: &ManagedRef<'_>) -> Ordering {
        let mut mine = self.chunks();
        let mut theirs = other.chunks();
        let (mut a, mut b): (&[u8], &[u8]) = (&[], &[]);
        loop {
            if a.is_empty() {
                a = mine.find(|c| !c.is_empty()).unwrap_or(&[]);
            }
            if b.is_empty() {
                b = theirs.find(|c| !c.is_empty()).unwrap_or(&[]);
            }
            match (a.is_empty(), b.is_empty()) {
                (true, true) => return Ordering::Equal,
                (true, false) => return Ordering::Less,
                (false, true) => return Ordering::Greater,
                (false, false) => {}
            }
            let n = a.len().min(b.len());
            match a[..n].cmp(&b[..n]) {
                Ordering::Equal => {}
                unequal => return unequal,
            }
            a = &a[n..];
            b = &b[n..];
        }
    }

    /// Appends the bytes to `out`.
    pub fn copy_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.len);
        for chunk in self.chunks() {
            out.extend_from_slice(chunk);
        }
    }

    /// The bytes, copied into a vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.copy_to(&mut out);
        out
    }
}
