//! The index: a B+tree whose nodes are region objects linked by handles.
//!
//! A node is one fixed-size object (so it is changed in place): a leaf
//! (`8 + 24 * fanout` bytes) holds up to `fanout` entries of one
//! [`ManagedBytes`] (handle and 32-bit length) holding the stored key then
//! the value, the key's length, and the key's first 8 bytes, its token,
//! which the stored key omits (see `key.rs`; a key is its head, then its
//! stored bytes, and compares so); an internal node (`8 + 28 * fanout`
//! bytes) holds up to `fanout` child handles and one fewer separator keys
//! (a string each, and its head). Inserts, value replacements, leaf splits
//! and separator inserts work on the node's bytes; only a full internal
//! node is decoded ([`Node`]) to split. Child `i` holds the keys in
//! `[sep[i-1], sep[i])`. A separator is a copy of the first key of the
//! right half made when a leaf splits; it is owned by its internal node and
//! freed with its slot. Deletion never rebalances: a leaf that becomes empty
//! leaves its parent (with one separator), a root with one child gives way
//! to the child. Underfull nodes are allowed; only structure-changing
//! operations are all-or-nothing through an [`Undo`] log.

use std::cmp::Ordering;

use logalloc::{Handle, ManagedBytes, ManagedRef, RegionReader, RegionWriter};

use crate::Error;
use crate::key::SearchKey;

/// Read access to region objects: a shared [`RegionReader`] or the
/// exclusive [`RegionWriter`] of an apply.
pub(crate) trait View {
    fn get(&self, handle: Handle) -> Result<&[u8], logalloc::Error>;
    fn managed(&self, bytes: ManagedBytes) -> Result<ManagedRef<'_>, logalloc::Error>;
}

impl View for RegionReader<'_> {
    fn get(&self, handle: Handle) -> Result<&[u8], logalloc::Error> {
        RegionReader::get(self, handle)
    }
    fn managed(&self, bytes: ManagedBytes) -> Result<ManagedRef<'_>, logalloc::Error> {
        RegionReader::managed(self, bytes)
    }
}

impl View for RegionWriter<'_> {
    fn get(&self, handle: Handle) -> Result<&[u8], logalloc::Error> {
        RegionWriter::get(self, handle)
    }
    fn managed(&self, bytes: ManagedBytes) -> Result<ManagedRef<'_>, logalloc::Error> {
        RegionWriter::managed(self, bytes)
    }
}

/// Deepest tree supported (levels above the leaves); far beyond what a
/// region can hold with a fanout of at least 4.
pub(crate) const MAX_HEIGHT: usize = 40;
const LEAF: u8 = 1;
const INTERNAL: u8 = 2;
const HEADER: usize = 8;
/// A [`ManagedBytes`] in a node: its head handle and its length as a
/// `u32` (12 bytes rather than its own 16-byte encoding; no string is
/// longer, see [`Undo::alloc_managed`]).
const MB: usize = 12;
/// A key's first 8 bytes (its token), kept in the node next to the key's
/// handle so that most comparisons need no lookup of the key itself; the
/// stored key is the rest.
const HEAD: usize = 8;
/// The length of an entry's stored key, a `u32`.
const KLEN: usize = 4;
/// A leaf entry: its string (the stored key, then the value), the key's
/// length, the key's head.
const ENTRY: usize = MB + KLEN + HEAD;
/// An internal node's separator: key, key head.
const SEP: usize = MB + HEAD;
/// An internal node's room per child: its handle and a separator.
const SLOT: usize = 8 + SEP;
const MAX_FANOUT: usize = 64;
/// The smallest fanout a tree works with.
pub(crate) const MIN_FANOUT: usize = 4;

fn corrupt(detail: &str) -> Error {
    Error::Corrupt {
        detail: format!("index node: {detail}"),
    }
}

fn read_mb(bytes: &[u8], at: usize) -> Result<ManagedBytes, Error> {
    let raw = bytes.get(at..at + MB).ok_or_else(|| corrupt("truncated"))?;
    let mut full = [0u8; ManagedBytes::ENCODED_LEN];
    full[..MB].copy_from_slice(raw);
    ManagedBytes::from_bytes(full).ok_or_else(|| corrupt("null key or value"))
}

/// The node encoding of a string (see [`MB`]).
fn mb_bytes(m: ManagedBytes) -> [u8; MB] {
    let mut out = [0u8; MB];
    out.copy_from_slice(&m.to_bytes()[..MB]);
    out
}

fn read_handle(bytes: &[u8], at: usize) -> Result<Handle, Error> {
    let raw: [u8; 8] = bytes
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| corrupt("truncated"))?;
    Handle::from_raw(u64::from_le_bytes(raw)).ok_or_else(|| corrupt("null child"))
}

fn count(bytes: &[u8]) -> usize {
    u16::from_le_bytes([bytes[2], bytes[3]]) as usize
}

/// A leaf entry: one string holding the stored key and then the value
/// (one region object, one handle: a key and its value are written,
/// replaced and freed together).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The stored key (the key without its head), then the value.
    pub(crate) kv: ManagedBytes,
    /// The stored key's length.
    key_len: usize,
    /// The key's first 8 bytes.
    head: [u8; HEAD],
}

impl Entry {
    /// An entry for `key` (as searched for), stored as `kv`, whose first
    /// `key_len` bytes are the stored key.
    pub(crate) fn new(key: &SearchKey<'_>, kv: ManagedBytes, key_len: usize) -> Entry {
        Entry {
            kv,
            key_len,
            head: key.head(),
        }
    }

    /// The stored key's length.
    pub(crate) fn key_len(&self) -> usize {
        self.key_len
    }

    /// The stored key's part of the entry's string.
    pub(crate) fn key<'v>(&self, view: &'v impl View) -> Result<Part<'v>, Error> {
        Ok(Part {
            whole: view.managed(self.kv)?,
            start: 0,
            end: self.key_len,
        })
    }

    /// The value's part of the entry's string.
    pub(crate) fn value<'v>(&self, view: &'v impl View) -> Result<Part<'v>, Error> {
        Ok(Part {
            whole: view.managed(self.kv)?,
            start: self.key_len,
            end: self.kv.len(),
        })
    }

    /// The key's first 8 bytes (its token), as the node holds them.
    pub(crate) fn head(&self) -> [u8; HEAD] {
        self.head
    }
}

/// A byte range of a stored string: an entry's key or value, or a whole
/// separator. Compared and decoded without a copy when the string is one
/// object; a chunked one is copied out.
pub(crate) struct Part<'a> {
    whole: ManagedRef<'a>,
    start: usize,
    end: usize,
}

impl<'a> Part<'a> {
    /// All of a string.
    fn whole(whole: ManagedRef<'a>) -> Part<'a> {
        let end = whole.len();
        Part {
            whole,
            start: 0,
            end,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.end - self.start
    }

    /// The bytes, if the string is one object.
    pub(crate) fn as_contiguous(&self) -> Option<&'a [u8]> {
        self.whole
            .as_contiguous()
            .and_then(|b| b.get(self.start..self.end))
    }

    /// The bytes, in the pieces the string's chunks hold them.
    pub(crate) fn pieces(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        let mut pos = 0;
        self.whole.chunks().filter_map(move |chunk| {
            let (from, to) = (pos, pos + chunk.len());
            pos = to;
            if to <= self.start || from >= self.end {
                return None;
            }
            Some(&chunk[self.start.max(from) - from..self.end.min(to) - from])
        })
    }

    /// The bytes compared with `other`, piece by piece (no copy).
    pub(crate) fn cmp_bytes(&self, other: &[u8]) -> Ordering {
        let mut rest = other;
        for piece in self.pieces() {
            let n = piece.len().min(rest.len());
            match piece[..n].cmp(&rest[..n]) {
                Ordering::Equal if n < piece.len() => return Ordering::Greater,
                Ordering::Equal => rest = &rest[n..],
                unequal => return unequal,
            }
        }
        if rest.is_empty() {
            Ordering::Equal
        } else {
            Ordering::Less
        }
    }

    /// Appends the bytes to `out`.
    pub(crate) fn copy_to(&self, out: &mut Vec<u8>) {
        for piece in self.pieces() {
            out.extend_from_slice(piece);
        }
    }

    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        self.copy_to(&mut out);
        out
    }

    /// `f` of the bytes as one slice, copying only a chunked string.
    pub(crate) fn with_bytes<T>(&self, f: impl FnOnce(&[u8]) -> T) -> T {
        match self.as_contiguous() {
            Some(b) => f(b),
            None => f(&self.to_vec()),
        }
    }
}

fn read_head(bytes: &[u8], at: usize) -> Result<[u8; HEAD], Error> {
    bytes
        .get(at..at + HEAD)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| corrupt("truncated"))
}

/// `key` (whose head, as a big-endian integer, is `key_head`) compared
/// with the key of the leaf entry at offset `at` of the node `bytes`: by
/// the heads first (one integer comparison), looking the stored key up only
/// if those are equal.
fn cmp_key(
    view: &impl View,
    key: &SearchKey<'_>,
    key_head: u64,
    bytes: &[u8],
    at: usize,
) -> Result<Ordering, Error> {
    match key_head.cmp(&u64::from_be_bytes(read_head(bytes, at + MB + KLEN)?)) {
        Ordering::Equal => Ok(key.cmp_tail(&read_entry(bytes, at)?.key(view)?)),
        unequal => Ok(unequal),
    }
}

/// The stored key at offset `at` of a node of `kind`: a leaf entry's key,
/// or a whole separator.
fn stored_key_at<'v>(
    view: &'v impl View,
    bytes: &[u8],
    at: usize,
    kind: u8,
) -> Result<Part<'v>, Error> {
    if kind == LEAF {
        read_entry(bytes, at)?.key(view)
    } else {
        Ok(Part::whole(view.managed(read_mb(bytes, at)?)?))
    }
}

/// The leaf entry encoded at offset `at` of `bytes`.
fn read_entry(bytes: &[u8], at: usize) -> Result<Entry, Error> {
    let kv = read_mb(bytes, at)?;
    let raw: [u8; KLEN] = bytes
        .get(at + MB..at + MB + KLEN)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| corrupt("truncated"))?;
    let key_len = u32::from_le_bytes(raw) as usize;
    if key_len > kv.len() {
        return Err(corrupt("key longer than its entry"));
    }
    Ok(Entry {
        kv,
        key_len,
        head: read_head(bytes, at + MB + KLEN)?,
    })
}

/// Encodes a leaf entry at the start of `out`.
fn write_entry(out: &mut [u8], e: &Entry) {
    out[..MB].copy_from_slice(&mb_bytes(e.kv));
    // A key is shorter than its entry's string, whose length fits a u32.
    out[MB..MB + KLEN].copy_from_slice(&(e.key_len as u32).to_le_bytes());
    out[MB + KLEN..ENTRY].copy_from_slice(&e.head);
}

/// A node, decoded for modification.
#[derive(Debug)]
enum Node {
    Leaf(Vec<Entry>),
    Internal {
        children: Vec<Handle>,
        seps: Vec<(ManagedBytes, [u8; HEAD])>,
    },
}

impl Node {
    fn len(&self) -> usize {
        match self {
            Node::Leaf(e) => e.len(),
            Node::Internal { children, .. } => children.len(),
        }
    }
}

/// The tree's root and shape; the rest lives in the region.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tree {
    pub(crate) root: Option<Handle>,
    /// Levels above the leaves (0: the root is a leaf).
    pub(crate) height: usize,
    pub(crate) fanout: usize,
}

impl Tree {
    /// An empty tree whose nodes fit objects of `max_object` bytes.
    pub(crate) fn new(max_object: usize) -> Result<Tree, Error> {
        // Internal nodes are the larger (SLOT > ENTRY).
        let fanout = (max_object.saturating_sub(HEADER) / SLOT).min(MAX_FANOUT);
        if fanout < MIN_FANOUT {
            return Err(Error::SegmentTooSmall {
                max_object,
                min: HEADER + SLOT * MIN_FANOUT,
            });
        }
        Ok(Tree {
            root: None,
            height: 0,
            fanout,
        })
    }

    fn leaf_size(&self) -> usize {
        HEADER + ENTRY * self.fanout
    }

    fn internal_size(&self) -> usize {
        HEADER + SLOT * self.fanout
    }

    fn node_size(&self, node: &Node) -> usize {
        match node {
            Node::Leaf(_) => self.leaf_size(),
            Node::Internal { .. } => self.internal_size(),
        }
    }

    fn decode(&self, bytes: &[u8]) -> Result<Node, Error> {
        let n = count(bytes);
        if n > self.fanout {
            return Err(corrupt("count above fanout"));
        }
        match bytes[0] {
            LEAF => (0..n)
                .map(|i| Self::leaf_entry(bytes, i))
                .collect::<Result<_, _>>()
                .map(Node::Leaf),
            INTERNAL => Ok(Node::Internal {
                children: (0..n)
                    .map(|i| read_handle(bytes, HEADER + i * 8))
                    .collect::<Result<_, _>>()?,
                seps: (0..n.saturating_sub(1))
                    .map(|i| {
                        let at = self.sep_at(i);
                        Ok((read_mb(bytes, at)?, read_head(bytes, at + MB)?))
                    })
                    .collect::<Result<_, Error>>()?,
            }),
            _ => Err(corrupt("unknown node kind")),
        }
    }

    fn sep_at(&self, i: usize) -> usize {
        HEADER + 8 * self.fanout + i * SEP
    }

    fn encode(&self, node: &Node, out: &mut [u8]) {
        out.fill(0);
        out[2..4].copy_from_slice(&(node.len() as u16).to_le_bytes());
        match node {
            Node::Leaf(entries) => {
                out[0] = LEAF;
                for (i, e) in entries.iter().enumerate() {
                    write_entry(&mut out[HEADER + i * ENTRY..], e);
                }
            }
            Node::Internal { children, seps } => {
                out[0] = INTERNAL;
                for (i, c) in children.iter().enumerate() {
                    let at = HEADER + i * 8;
                    out[at..at + 8].copy_from_slice(&c.to_raw().to_le_bytes());
                }
                for (i, (s, head)) in seps.iter().enumerate() {
                    let at = self.sep_at(i);
                    out[at..at + MB].copy_from_slice(&mb_bytes(*s));
                    out[at + MB..at + SEP].copy_from_slice(head);
                }
            }
        }
    }

    /// Entry `i` of the leaf whose node bytes are `bytes`.
    fn leaf_entry(bytes: &[u8], i: usize) -> Result<Entry, Error> {
        let entries = bytes.get(HEADER..).ok_or_else(|| corrupt("truncated"))?;
        Self::leaf_entry_of(entries, i)
    }

    /// Fills `cursor` with the path to the leaf position of the first entry
    /// `>= key` (`> key` if `strict`); that position may be one past the
    /// leaf's last entry. False if the tree is empty.
    fn descend(
        &self,
        view: &impl View,
        key: &SearchKey<'_>,
        strict: bool,
        cursor: &mut Cursor,
    ) -> Result<bool, Error> {
        let Some(mut node) = self.root else {
            cursor.depth = 0;
            return Ok(false);
        };
        cursor.depth = self.height + 1;
        let key_head = u64::from_be_bytes(key.head());
        for level in 0..=self.height {
            let bytes = view.get(node)?;
            let node_size = if level < self.height {
                self.internal_size()
            } else {
                self.leaf_size()
            };
            if bytes.len() < node_size {
                return Err(corrupt("truncated"));
            }
            let n = count(bytes);
            if n > self.fanout {
                return Err(corrupt("count above fanout"));
            }
            cursor.nodes[level] = Some(node);
            // Binary search on the heads kept in the node (every index
            // below is inside `node_size`), looking a stored key up only
            // when the heads tie.
            let (kind, len, base, stride, head_off) = if level < self.height {
                // Child i holds [sep[i-1], sep[i]): the number of seps <= key.
                (INTERNAL, n.saturating_sub(1), self.sep_at(0), SEP, MB)
            } else {
                (LEAF, n, HEADER, ENTRY, MB + KLEN)
            };
            if bytes[0] != kind || (kind == INTERNAL && n == 0) {
                return Err(corrupt("unexpected node kind"));
            }
            // The predicate (true on a prefix): the stored key is below
            // `key` (leaves, non-strict), or not above it (separators, and
            // leaves when `strict`).
            let below_or_equal = kind == INTERNAL || strict;
            let (mut lo, mut hi) = (0, len);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let at = base + mid * stride;
                let head = u64::from_be_bytes(
                    bytes[at + head_off..at + head_off + HEAD]
                        .try_into()
                        .expect("8 bytes"),
                );
                let c = match key_head.cmp(&head) {
                    Ordering::Equal => key.cmp_tail(&stored_key_at(view, bytes, at, kind)?),
                    unequal => unequal,
                };
                let go_right = if below_or_equal {
                    c != Ordering::Less
                } else {
                    c == Ordering::Greater
                };
                if go_right {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            cursor.idx[level] = lo;
            if level < self.height {
                node = read_handle(bytes, HEADER + lo * 8)?;
            }
        }
        Ok(true)
    }

    /// Positions `cursor` at the first entry `>= key` (`> key` if `strict`)
    /// and returns it, or `None` (and an exhausted cursor) if there is none.
    pub(crate) fn seek(
        &self,
        view: &impl View,
        key: &SearchKey<'_>,
        strict: bool,
        cursor: &mut Cursor,
    ) -> Result<Option<Entry>, Error> {
        if !self.descend(view, key, strict, cursor)? {
            return Ok(None);
        }
        let leaf = self.height;
        let bytes = view.get(cursor.nodes[leaf].expect("descended"))?;
        if cursor.idx[leaf] < count(bytes) {
            return Self::leaf_entry(bytes, cursor.idx[leaf]).map(Some);
        }
        self.climb(view, cursor)
    }

    /// Moves `cursor` to the next entry and returns it.
    pub(crate) fn advance(
        &self,
        view: &impl View,
        cursor: &mut Cursor,
    ) -> Result<Option<Entry>, Error> {
        if cursor.depth == 0 {
            return Ok(None);
        }
        let leaf = cursor.depth - 1;
        let bytes = view.get(cursor.nodes[leaf].expect("positioned"))?;
        cursor.idx[leaf] += 1;
        if cursor.idx[leaf] < count(bytes) {
            return Self::leaf_entry(bytes, cursor.idx[leaf]).map(Some);
        }
        self.climb(view, cursor)
    }

    /// From a leaf position past its end: the first entry of the next leaf.
    fn climb(&self, view: &impl View, cursor: &mut Cursor) -> Result<Option<Entry>, Error> {
        let leaf = cursor.depth - 1;
        let mut level = leaf;
        loop {
            if level == 0 {
                cursor.depth = 0; // exhausted
                return Ok(None);
            }
            level -= 1;
            let bytes = view.get(cursor.nodes[level].expect("positioned"))?;
            if cursor.idx[level] + 1 < count(bytes) {
                cursor.idx[level] += 1;
                let mut node = read_handle(bytes, HEADER + cursor.idx[level] * 8)?;
                for below in level + 1..=leaf {
                    cursor.nodes[below] = Some(node);
                    cursor.idx[below] = 0;
                    if below < leaf {
                        node = read_handle(view.get(node)?, HEADER)?;
                    }
                }
                let bytes = view.get(node)?;
                if count(bytes) == 0 {
                    return Err(corrupt("empty leaf below the root"));
                }
                return Self::leaf_entry(bytes, 0).map(Some);
            }
        }
    }

    /// The entry with exactly `key`, if any.
    pub(crate) fn find(
        &self,
        view: &impl View,
        key: &SearchKey<'_>,
        cursor: &mut Cursor,
    ) -> Result<Option<Entry>, Error> {
        match self.seek(view, key, false, cursor)? {
            Some(e) if key.cmp_entry(e.head, &e.key(view)?) == Ordering::Equal => Ok(Some(e)),
            _ => Ok(None),
        }
    }

    /// Every object of the index itself (nodes, and the separators the
    /// internal nodes own), not the entries' strings: what a hand-over
    /// frees before the entries change hands.
    pub(crate) fn index_objects(
        &self,
        view: &impl View,
    ) -> Result<(Vec<Handle>, Vec<ManagedBytes>), Error> {
        let (mut nodes, mut seps) = (Vec::new(), Vec::new());
        let Some(root) = self.root else {
            return Ok((nodes, seps));
        };
        let mut level = vec![root];
        for depth in 0..=self.height {
            let mut below = Vec::new();
            for &node in &level {
                if depth < self.height {
                    let Node::Internal { children, seps: s } = self.read_node(view, node)? else {
                        return Err(corrupt("a leaf above the leaf level"));
                    };
                    below.extend(children);
                    seps.extend(s.into_iter().map(|(m, _)| m));
                }
            }
            nodes.append(&mut level);
            level = below;
        }
        Ok((nodes, seps))
    }

    fn read_node(&self, view: &impl View, handle: Handle) -> Result<Node, Error> {
        self.decode(view.get(handle)?)
    }

    /// Inserts an entry whose key (`key`, stored as `entry.key`) is not in
    /// the tree.
    pub(crate) fn insert(
        &mut self,
        w: &mut RegionWriter<'_>,
        undo: &mut Undo,
        key: &SearchKey<'_>,
        kv: ManagedBytes,
        key_len: usize,
    ) -> Result<(), Error> {
        let entry = Entry::new(key, kv, key_len);
        let mut cursor = Cursor::new();
        if !self.descend(w, key, false, &mut cursor)? {
            let leaf = undo.alloc_node(w, self, &Node::Leaf(vec![entry]))?;
            self.root = Some(leaf);
            self.height = 0;
            return Ok(());
        }
        if self.insert_at(w, undo, &cursor, &[entry])? {
            return Ok(());
        }
        let level = self.height;
        let handle = cursor.nodes[level].expect("descended");
        let (right, sep) = self.split_leaf(w, undo, handle, cursor.idx[level], &entry)?;
        self.insert_separator(w, undo, &cursor, level, handle, right, sep)
    }

    /// Splits the full leaf `handle` with `entry` inserted at `at`, on the
    /// bytes: the lower half stays, the upper half goes to a new leaf.
    /// Returns the new leaf and its separator (a copy of its first key).
    fn split_leaf(
        &self,
        w: &mut RegionWriter<'_>,
        undo: &mut Undo,
        handle: Handle,
        at: usize,
        entry: &Entry,
    ) -> Result<(Handle, (ManagedBytes, [u8; HEAD])), Error> {
        // The entries with `entry` inserted, one after another.
        let mut all = [0u8; (MAX_FANOUT + 1) * ENTRY];
        let n = {
            let bytes = w.get(handle)?;
            let n = count(bytes);
            if bytes[0] != LEAF || n > self.fanout || at > n {
                return Err(corrupt("expected a leaf"));
            }
            all[..at * ENTRY].copy_from_slice(&bytes[HEADER..HEADER + at * ENTRY]);
            all[(at + 1) * ENTRY..(n + 1) * ENTRY]
                .copy_from_slice(&bytes[HEADER + at * ENTRY..HEADER + n * ENTRY]);
            n
        };
        write_entry(&mut all[at * ENTRY..], entry);
        let total = n + 1;
        let mid = total / 2;
        let first = Self::leaf_entry_of(&all, mid)?;
        let first_key = first.key(w)?.to_vec();
        let sep = (undo.alloc_managed(w, &first_key)?, first.head);
        let write = |out: &mut [u8], entries: &[u8]| {
            out.fill(0);
            out[0] = LEAF;
            out[2..4].copy_from_slice(&((entries.len() / ENTRY) as u16).to_le_bytes());
            out[HEADER..HEADER + entries.len()].copy_from_slice(entries);
        };
        let right = w.alloc_with(self.leaf_size(), 8, |out| {
            write(out, &all[mid * ENTRY..total * ENTRY]);
        })?;
        undo.fresh.push(right);
        undo.save(w, handle)?;
        write(w.get_mut(handle)?, &all[..mid * ENTRY]);
        Ok((right, sep))
    }

    /// Entry `i` of a run of encoded entries.
    fn leaf_entry_of(entries: &[u8], i: usize) -> Result<Entry, Error> {
        read_entry(entries, i * ENTRY)
    }

    /// Adds child `right` after child `at` of the internal node `handle`,
    /// with `sep` between them, on the bytes, if the node has room; false
    /// (nothing changed) if it has not.
    fn insert_child_in_place(
        &self,
        w: &mut RegionWriter<'_>,
        undo: &mut Undo,
        handle: Handle,
        at: usize,
        right: Handle,
        sep: (ManagedBytes, [u8; HEAD]),
    ) -> Result<bool, Error> {
        let n = {
            let bytes = w.get(handle)?;
            let n = count(bytes);
            if bytes[0] != INTERNAL || n == 0 || n > self.fanout || at >= n {
                return Err(corrupt("expected an internal node"));
            }
            n
        };
        if n == self.fanout {
            return Ok(false);
        }
        undo.save(w, handle)?;
        let bytes = w.get_mut(handle)?;
        let c = HEADER + (at + 1) * 8;
        bytes.copy_within(c..HEADER + n * 8, c + 8);
        bytes[c..c + 8].copy_from_slice(&right.to_raw().to_le_bytes());
        let s = self.sep_at(at);
        bytes.copy_within(s..self.sep_at(n - 1), s + SEP);
        bytes[s..s + MB].copy_from_slice(&mb_bytes(sep.0));
        bytes[s + MB..s + SEP].copy_from_slice(&sep.1);
        bytes[2..4].copy_from_slice(&((n + 1) as u16).to_le_bytes());
        Ok(true)
    }

    /// After the node at `level` of `cursor`'s path (`handle`) split off
    /// `right` with separator `sep`: adds them to the parent, splitting
    /// internal nodes up the path as needed, and grows a new root when the
    /// root split.
    #[allow(clippy::too_many_arguments)]
    fn insert_separator(
        &mut self,
        w: &mut RegionWriter<'_>,
        undo: &mut Undo,
        cursor: &Cursor,
        mut level: usize,
        mut handle: Handle,
        mut right: Handle,
        mut sep: (ManagedBytes, [u8; HEAD]),
    ) -> Result<(), Error> {
        loop {
            if level == 0 {
                if self.height == MAX_HEIGHT {
                    return Err(Error::IndexTooDeep { max: MAX_HEIGHT });
                }
                let root = Node::Internal {
                    children: vec![handle, right],
                    seps: vec![sep],
                };
                self.root = Some(undo.alloc_node(w, self, &root)?);
                self.height += 1;
                return Ok(());
            }
            level -= 1;
            handle = cursor.nodes[level].expect("descended");
            let at = cursor.idx[level];
            if self.insert_child_in_place(w, undo, handle, at, right, sep)? {
                return Ok(());
            }
            let mut node = self.read_node(w, handle)?;
            let Node::Internal { children, seps } = &mut node else {
                return Err(corrupt("expected an internal node"));
            };
            children.insert(at + 1, right);
            seps.insert(at, sep);
            if children.len() <= self.fanout {
                return undo.write_node(w, self, handle, &node);
            }
            let mid = children.len() / 2;
            let right_children = children.split_off(mid);
            let right_seps = seps.split_off(mid);
            sep = seps.pop().expect("an internal node above fanout has seps");
            right = undo.alloc_node(
                w,
                self,
                &Node::Internal {
                    children: right_children,
                    seps: right_seps,
                },
            )?;
            undo.write_node(w, self, handle, &node)?;
        }
    }

    /// Replaces the string of the entry with `key` by `value`, which starts
    /// with the same stored key (a new value, the key copied with it);
    /// returns the old string.
    pub(crate) fn set_value(
        &mut self,
        w: &mut RegionWriter<'_>,
        undo: &mut Undo,
        key: &SearchKey<'_>,
        value: ManagedBytes,
    ) -> Result<ManagedBytes, Error> {
        let mut cursor = Cursor::new();
        self.descend(w, key, false, &mut cursor)?;
        let (handle, at) = self.exact(w, key, &cursor)?;
        self.set_value_at(w, undo, handle, at, value)
    }

    /// As [`set_value`](Self::set_value), for the entry
    /// [`locate`](Self::locate) found and left `cursor` at.
    pub(crate) fn set_value_here(
        &self,
        w: &mut RegionWriter<'_>,
        undo: &mut Undo,
        cursor: &Cursor,
        value: ManagedBytes,
    ) -> Result<ManagedBytes, Error> {
        if cursor.depth == 0 {
            return Err(corrupt("key not found"));
        }
        let leaf = cursor.depth - 1;
        let handle = cursor.nodes[leaf].expect("descended");
        self.set_value_at(w, undo, handle, cursor.idx[leaf], value)
    }

    /// Replaces the string of entry `at` of leaf `handle` in place (its key
    /// length stays); returns the old string.
    fn set_value_at(
        &self,
        w: &mut RegionWriter<'_>,
        undo: &mut Undo,
        handle: Handle,
        at: usize,
        value: ManagedBytes,
    ) -> Result<ManagedBytes, Error> {
        undo.save(w, handle)?;
        let bytes = w.get_mut(handle)?;
        let offset = HEADER + at * ENTRY;
        let old = read_mb(bytes, offset)?;
        bytes[offset..offset + MB].copy_from_slice(&mb_bytes(value));
        Ok(old)
    }

    /// Positions `cursor` where `key` is or would be inserted (the leaf
    /// position [`insert_at`](Self::insert_at) takes) and returns the entry
    /// with exactly `key`, if any: one descent for a lookup and an insert.
    pub(crate) fn locate(
        &self,
        view: &impl View,
        key: &SearchKey<'_>,
        cursor: &mut Cursor,
    ) -> Result<Option<Entry>, Error> {
        if !self.descend(view, key, false, cursor)? {
            return Ok(None);
        }
        self.here_if(view, key, cursor)
    }

    /// [`locate`](Self::locate), also returning the first entry `>= key`
    /// (the exact one if there is one): the entry at `cursor`'s position,
    /// or the first of the next leaf if that position is one past its
    /// leaf's last entry (`cursor` stays at the position either way).
    pub(crate) fn locate_and_next(
        &self,
        view: &impl View,
        key: &SearchKey<'_>,
        cursor: &mut Cursor,
    ) -> Result<(Option<Entry>, Option<Entry>), Error> {
        if !self.descend(view, key, false, cursor)? {
            return Ok((None, None));
        }
        let leaf = cursor.depth - 1;
        let bytes = view.get(cursor.nodes[leaf].expect("descended"))?;
        let at = cursor.idx[leaf];
        if at >= count(bytes) {
            return Ok((None, self.climb(view, &mut cursor.clone())?));
        }
        let next = Self::leaf_entry(bytes, at)?;
        let o = HEADER + at * ENTRY;
        let key_head = u64::from_be_bytes(key.head());
        let exact = cmp_key(view, key, key_head, bytes, o)? == Ordering::Equal;
        Ok((exact.then_some(next), Some(next)))
    }

    /// The entry `cursor` is at (where [`seek`](Self::seek) or
    /// [`advance`](Self::advance) left it), or `None` if it is exhausted.
    pub(crate) fn current(
        &self,
        view: &impl View,
        cursor: &Cursor,
    ) -> Result<Option<Entry>, Error> {
        match Self::at_cursor(view, cursor)? {
            None => Ok(None),
            Some((bytes, at)) if at < count(bytes) => Self::leaf_entry(bytes, at).map(Some),
            Some(_) => Err(corrupt("cursor past its leaf")),
        }
    }

    /// The bytes of `cursor`'s leaf and its position there, or `None` if
    /// the cursor is not positioned.
    fn at_cursor<'v>(
        view: &'v impl View,
        cursor: &Cursor,
    ) -> Result<Option<(&'v [u8], usize)>, Error> {
        if cursor.depth == 0 {
            return Ok(None);
        }
        let leaf = cursor.depth - 1;
        let bytes = view.get(cursor.nodes[leaf].expect("positioned"))?;
        Ok(Some((bytes, cursor.idx[leaf])))
    }

    /// If the entry at `cursor`'s position in its leaf has exactly `key`,
    /// returns it (no descent; `cursor` stays at it); otherwise `None`.
    pub(crate) fn here_if(
        &self,
        view: &impl View,
        key: &SearchKey<'_>,
        cursor: &Cursor,
    ) -> Result<Option<Entry>, Error> {
        let Some((bytes, at)) = Self::at_cursor(view, cursor)? else {
            return Ok(None);
        };
        if at >= count(bytes) {
            return Ok(None);
        }
        let o = HEADER + at * ENTRY;
        let key_head = u64::from_be_bytes(key.head());
        if cmp_key(view, key, key_head, bytes, o)? != Ordering::Equal {
            return Ok(None);
        }
        Self::leaf_entry(bytes, at).map(Some)
    }

    /// If the entry just after `cursor`'s position in the same leaf has
    /// exactly `key`, moves `cursor` to it and returns it (no descent);
    /// otherwise `None`, `cursor` unchanged. `cursor` must be at an entry
    /// of the tree as it is.
    pub(crate) fn next_if(
        &self,
        view: &impl View,
        key: &SearchKey<'_>,
        cursor: &mut Cursor,
    ) -> Result<Option<Entry>, Error> {
        if cursor.depth == 0 {
            return Ok(None);
        }
        let leaf = cursor.depth - 1;
        let bytes = view.get(cursor.nodes[leaf].expect("positioned"))?;
        let at = cursor.idx[leaf] + 1;
        if at >= count(bytes) {
            return Ok(None);
        }
        let o = HEADER + at * ENTRY;
        let key_head = u64::from_be_bytes(key.head());
        if cmp_key(view, key, key_head, bytes, o)? != Ordering::Equal {
            return Ok(None);
        }
        cursor.idx[leaf] = at;
        Self::leaf_entry(bytes, at).map(Some)
    }

    /// Inserts `entries` (ascending, none in the tree, all ordered between
    /// the neighbours of the leaf position `cursor` came to by a descent
    /// for the first of them) at that position, in place, if the leaf has
    /// room for them all; false (nothing changed) if it has not, or if the
    /// tree is empty.
    pub(crate) fn insert_at(
        &self,
        w: &mut RegionWriter<'_>,
        undo: &mut Undo,
        cursor: &Cursor,
        entries: &[Entry],
    ) -> Result<bool, Error> {
        if cursor.depth == 0 {
            return Ok(false);
        }
        let handle = cursor.nodes[cursor.depth - 1].expect("descended");
        let at = cursor.idx[cursor.depth - 1];
        let n = count(w.get(handle)?);
        if n + entries.len() > self.fanout || at > n {
            return Ok(false);
        }
        undo.save(w, handle)?;
        let bytes = w.get_mut(handle)?;
        if bytes[0] != LEAF {
            return Err(corrupt("expected a leaf"));
        }
        let start = HEADER + at * ENTRY;
        let end = HEADER + n * ENTRY;
        let shift = entries.len() * ENTRY;
        bytes.copy_within(start..end, start + shift);
        for (i, e) in entries.iter().enumerate() {
            write_entry(&mut bytes[start + i * ENTRY..], e);
        }
        bytes[2..4].copy_from_slice(&((n + entries.len()) as u16).to_le_bytes());
        Ok(true)
    }

    fn exact(
        &self,
        view: &impl View,
        key: &SearchKey<'_>,
        cursor: &Cursor,
    ) -> Result<(Handle, usize), Error> {
        if cursor.depth == 0 {
            return Err(corrupt("key not found"));
        }
        let leaf = cursor.depth - 1;
        let handle = cursor.nodes[leaf].expect("descended");
        let bytes = view.get(handle)?;
        let at = cursor.idx[leaf];
        if at >= count(bytes) || {
            let e = Self::leaf_entry(bytes, at)?;
            key.cmp_entry(e.head, &e.key(view)?) != Ordering::Equal
        } {
            return Err(corrupt("key not found"));
        }
        Ok((handle, at))
    }

    /// Removes the entry with `key` and returns it; its key and value are
    /// the caller's to free. Emptied nodes and their separators are freed
    /// through `undo` at commit.
    pub(crate) fn remove(
        &mut self,
        w: &mut RegionWriter<'_>,
        undo: &mut Undo,
        key: &SearchKey<'_>,
    ) -> Result<Entry, Error> {
        let mut cursor = Cursor::new();
        self.descend(w, key, false, &mut cursor)?;
        let (handle, at) = self.exact(w, key, &cursor)?;
        let mut node = self.read_node(w, handle)?;
        let Node::Leaf(entries) = &mut node else {
            return Err(corrupt("expected a leaf"));
        };
        let removed = entries.remove(at);
        if !entries.is_empty() {
            undo.write_node(w, self, handle, &node)?;
            return Ok(removed);
        }
        // The leaf is empty: take it out of its parents.
        undo.free_node(handle);
        let mut level = self.height;
        loop {
            if level == 0 {
                self.root = None;
                self.height = 0;
                return Ok(removed);
            }
            level -= 1;
            let parent = cursor.nodes[level].expect("descended");
            let mut node = self.read_node(w, parent)?;
            let Node::Internal { children, seps } = &mut node else {
                return Err(corrupt("expected an internal node"));
            };
            let i = cursor.idx[level];
            children.remove(i);
            if !seps.is_empty() {
                undo.free_managed(seps.remove(i.saturating_sub(1)).0);
            }
            if children.is_empty() {
                undo.free_node(parent);
                continue;
            }
            undo.write_node(w, self, parent, &node)?;
            break;
        }
        // A root with one child gives way to it.
        while self.height > 0 {
            let root = self.root.expect("non-empty");
            let node = self.read_node(w, root)?;
            match node {
                Node::Internal { children, .. } if children.len() == 1 => {
                    undo.free_node(root);
                    self.root = Some(children[0]);
                    self.height -= 1;
                }
                _ => break,
            }
        }
        Ok(removed)
    }
}

/// A position in the tree: the path from the root to a leaf entry. Valid
/// only while the tree's structure is unchanged (the memtable's version).
#[derive(Clone, Debug)]
pub(crate) struct Cursor {
    nodes: [Option<Handle>; MAX_HEIGHT + 1],
    idx: [usize; MAX_HEIGHT + 1],
    /// Levels on the path; 0 when unpositioned or exhausted.
    depth: usize,
}

impl Cursor {
    pub(crate) fn new() -> Cursor {
        Cursor {
            nodes: [None; MAX_HEIGHT + 1],
            idx: [0; MAX_HEIGHT + 1],
            depth: 0,
        }
    }
}

/// What an apply changed, so a failure can put everything back: node
/// images before their first change, objects allocated (freed on
/// rollback), objects to free (freed on commit only).
/// The longest key or value a node can refer to (its length is kept in 32
/// bits; a mutation is far smaller).
const MAX_STRING: usize = u32::MAX as usize;

/// Image bytes an [`Undo`] keeps allocated between applies.
const KEEP_IMAGES: usize = 16 << 10;

#[derive(Debug, Default)]
pub(crate) struct Undo {
    /// Nodes saved before their first change: handle, offset of the image
    /// in `images`.
    saved: Vec<(Handle, usize)>,
    images: Vec<u8>,
    fresh: Vec<Handle>,
    fresh_managed: Vec<ManagedBytes>,
    to_free: Vec<Handle>,
    to_free_managed: Vec<ManagedBytes>,
}

impl Undo {
    fn alloc_node(
        &mut self,
        w: &mut RegionWriter<'_>,
        tree: &Tree,
        node: &Node,
    ) -> Result<Handle, Error> {
        let h = w.alloc_with(tree.node_size(node), 8, |bytes| tree.encode(node, bytes))?;
        self.fresh.push(h);
        Ok(h)
    }

    fn write_node(
        &mut self,
        w: &mut RegionWriter<'_>,
        tree: &Tree,
        handle: Handle,
        node: &Node,
    ) -> Result<(), Error> {
        self.save(w, handle)?;
        tree.encode(node, w.get_mut(handle)?);
        Ok(())
    }

    /// Saves a node's image before its first change in this apply (not
    /// for nodes the apply allocated).
    fn save(&mut self, w: &RegionWriter<'_>, handle: Handle) -> Result<(), Error> {
        if !self.fresh.contains(&handle) && !self.saved.iter().any(|(h, _)| *h == handle) {
            let at = self.images.len();
            self.images.extend_from_slice(w.get(handle)?);
            self.saved.push((handle, at));
        }
        Ok(())
    }

    /// Empties the log, keeping its buffers for the next apply (up to a
    /// bound, so the memtable's heap header stays small).
    pub(crate) fn clear(&mut self) {
        if self.images.capacity() > KEEP_IMAGES {
            *self = Undo::default();
        }
        self.saved.clear();
        self.images.clear();
        self.fresh.clear();
        self.fresh_managed.clear();
        self.to_free.clear();
        self.to_free_managed.clear();
    }

    /// Allocates a string that rollback frees.
    pub(crate) fn alloc_managed(
        &mut self,
        w: &mut RegionWriter<'_>,
        data: &[u8],
    ) -> Result<ManagedBytes, Error> {
        // A node keeps a string's length in 32 bits.
        if data.len() > MAX_STRING {
            return Err(Error::ValueTooLarge {
                size: data.len(),
                max: MAX_STRING,
            });
        }
        let m = w.alloc_managed(data)?;
        self.fresh_managed.push(m);
        Ok(m)
    }

    fn free_node(&mut self, handle: Handle) {
        self.to_free.push(handle);
    }

    /// Frees a string at commit.
    pub(crate) fn free_managed(&mut self, m: ManagedBytes) {
        self.to_free_managed.push(m);
    }

    /// Undoes everything: node images restored, new objects freed.
    pub(crate) fn rollback(&mut self, w: &mut RegionWriter<'_>) {
        for &(h, at) in &self.saved {
            // Live nodes of the tree as it was: they cannot be stale.
            if let Ok(bytes) = w.get_mut(h) {
                let len = bytes.len();
                bytes.copy_from_slice(&self.images[at..at + len]);
            }
        }
        for &h in &self.fresh {
            let freed = w.free(h);
            debug_assert!(freed.is_ok());
        }
        for &m in &self.fresh_managed {
            let freed = w.free_managed(m);
            debug_assert!(freed.is_ok());
        }
    }

    /// Makes the changes final: frees what they replaced. Returns the
    /// bytes of the strings freed (nodes not counted).
    pub(crate) fn commit(&mut self, w: &mut RegionWriter<'_>) -> Result<usize, Error> {
        for &h in &self.to_free {
            w.free(h)?;
        }
        let mut freed = 0;
        for &m in &self.to_free_managed {
            w.free_managed(m)?;
            freed += m.len();
        }
        Ok(freed)
    }
}
