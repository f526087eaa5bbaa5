//! Small ordered maps and sets for checked states: a sorted vector each.
//!
//! A checked state is cloned for every successor and kept until its level is expanded. The
//! ghost's and the environment's collections hold a handful of entries, and a `BTreeMap`
//! spends a whole node (eleven slots) on even one: most of a state's heap, its clone and its
//! page faults were those nodes. A sorted vector holds exactly its entries, clones with one
//! allocation, and compares, hashes and iterates in the same key order as the B-tree did (so
//! two states are equal exactly when they were before: every count stays what it was).
//!
//! Not for large collections: inserting and removing are linear in the length.

use std::borrow::Borrow;
use std::fmt;

use thin_vec::ThinVec;

/// An ordered map over a vector sorted by key (see the module doc for when to use it).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SortedMap<K, V> {
    items: ThinVec<(K, V)>,
}

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap {
            items: ThinVec::new(),
        }
    }
}

impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for SortedMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.items.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

impl<K: Ord, V> SortedMap<K, V> {
    /// An empty map.
    pub const fn new() -> Self {
        SortedMap {
            items: ThinVec::new(),
        }
    }

    fn find<Q: Ord + ?Sized>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        self.items.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The value of `key`.
    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|i| &self.items[i].1)
    }

    /// The value of `key`, to change.
    pub fn get_mut<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|i| &mut self.items[i].1)
    }

    /// Whether `key` has a value.
    pub fn contains_key<Q: Ord + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.find(key).is_ok()
    }

    /// Sets `key` to `value`; the value it replaced, if any.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.items[i].1, value)),
            Err(i) => {
                self.items.insert(i, (key, value));
                None
            }
        }
    }

    /// Removes `key`; its value, if it had one.
    pub fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|i| self.items.remove(i).1)
    }

    /// The value of `key`, inserted with `make` if absent.
    fn entry_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(&key) {
            Ok(i) => i,
            Err(i) => {
                self.items.insert(i, (key, make()));
                i
            }
        };
        &mut self.items[i].1
    }

    /// The place of `key`, as `BTreeMap::entry` gives it.
    pub fn entry(&mut self, key: K) -> Entry<'_, K, V> {
        Entry { map: self, key }
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, &V)> + ExactSizeIterator {
        self.items.iter().map(|(k, v)| (k, v))
    }

    /// Entries in key order, values to change.
    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = (&K, &mut V)> {
        self.items.iter_mut().map(|(k, v)| (&*k, v))
    }

    /// Keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator {
        self.items.iter().map(|(k, _)| k)
    }

    /// Values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator {
        self.items.iter().map(|(_, v)| v)
    }

    /// Values in key order, to change.
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> {
        self.items.iter_mut().map(|(_, v)| v)
    }

    /// Entries with keys in `range`, in key order.
    pub fn range(
        &self,
        range: impl std::ops::RangeBounds<K>,
    ) -> impl DoubleEndedIterator<Item = (&K, &V)> {
        use std::ops::Bound;
        let start = match range.start_bound() {
            Bound::Included(s) => self.items.partition_point(|(k, _)| k < s),
            Bound::Excluded(s) => self.items.partition_point(|(k, _)| k <= s),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(e) => self.items.partition_point(|(k, _)| k <= e),
            Bound::Excluded(e) => self.items.partition_point(|(k, _)| k < e),
            Bound::Unbounded => self.items.len(),
        };
        self.items[start..end.max(start)]
            .iter()
            .map(|(k, v)| (k, v))
    }

    /// Keeps the entries `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        self.items.retain_mut(|(k, v)| keep(k, v));
    }

    /// The first entry.
    pub fn first_key_value(&self) -> Option<(&K, &V)> {
        self.items.first().map(|(k, v)| (k, v))
    }

    /// The last entry.
    pub fn last_key_value(&self) -> Option<(&K, &V)> {
        self.items.last().map(|(k, v)| (k, v))
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.items.clear();
    }
}

/// A key's place in a [`SortedMap`].
pub struct Entry<'a, K, V> {
    map: &'a mut SortedMap<K, V>,
    key: K,
}

impl<'a, K: Ord, V> Entry<'a, K, V> {
    /// The value, inserted if absent.
    pub fn or_insert(self, value: V) -> &'a mut V {
        self.map.entry_or_insert_with(self.key, || value)
    }

    /// The value, made and inserted if absent.
    pub fn or_insert_with(self, make: impl FnOnce() -> V) -> &'a mut V {
        self.map.entry_or_insert_with(self.key, make)
    }

    /// The value, the default inserted if absent.
    pub fn or_default(self) -> &'a mut V
    where
        V: Default,
    {
        self.map.entry_or_insert_with(self.key, V::default)
    }

    /// Changes the value if present.
    pub fn and_modify(self, change: impl FnOnce(&mut V)) -> Self {
        if let Some(v) = self.map.get_mut(&self.key) {
            change(v);
        }
        self
    }
}

impl<K: Ord + Borrow<Q>, Q: Ord + ?Sized, V> std::ops::Index<&Q> for SortedMap<K, V> {
    type Output = V;
    /// The value of `key`; panics if absent (as `BTreeMap`'s index does).
    fn index(&self, key: &Q) -> &V {
        self.get(key).expect("no entry for the key")
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for SortedMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut map = SortedMap::new();
        map.extend(iter);
        map
    }
}

impl<K: Ord, V> Extend<(K, V)> for SortedMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<'a, K, V> IntoIterator for &'a SortedMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter().map(|(k, v)| (k, v))
    }
}

impl<K, V> IntoIterator for SortedMap<K, V> {
    type Item = (K, V);
    type IntoIter = thin_vec::IntoIter<(K, V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

/// An ordered set over a sorted vector (see the module doc for when to use it).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SortedSet<T> {
    items: ThinVec<T>,
}

impl<T> Default for SortedSet<T> {
    fn default() -> Self {
        SortedSet {
            items: ThinVec::new(),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for SortedSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.items.iter()).finish()
    }
}

impl<T: Ord> SortedSet<T> {
    /// An empty set.
    pub const fn new() -> Self {
        SortedSet {
            items: ThinVec::new(),
        }
    }

    fn find<Q: Ord + ?Sized>(&self, value: &Q) -> Result<usize, usize>
    where
        T: Borrow<Q>,
    {
        self.items.binary_search_by(|v| v.borrow().cmp(value))
    }

    /// Members.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// No members.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Whether `value` is a member.
    pub fn contains<Q: Ord + ?Sized>(&self, value: &Q) -> bool
    where
        T: Borrow<Q>,
    {
        self.find(value).is_ok()
    }

    /// Adds `value`; whether it was new.
    pub fn insert(&mut self, value: T) -> bool {
        match self.find(&value) {
            Ok(_) => false,
            Err(i) => {
                self.items.insert(i, value);
                true
            }
        }
    }

    /// Removes `value`; whether it was a member.
    pub fn remove<Q: Ord + ?Sized>(&mut self, value: &Q) -> bool
    where
        T: Borrow<Q>,
    {
        match self.find(value) {
            Ok(i) => {
                self.items.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// Members in order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    /// Keeps the members `keep` accepts.
    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.items.retain(keep);
    }

    /// The least member.
    pub fn first(&self) -> Option<&T> {
        self.items.first()
    }

    /// The greatest member.
    pub fn last(&self) -> Option<&T> {
        self.items.last()
    }

    /// Removes every member.
    pub fn clear(&mut self) {
        self.items.clear();
    }
}

impl<T: Ord> FromIterator<T> for SortedSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut set = SortedSet::new();
        set.extend(iter);
        set
    }
}

impl<T: Ord> Extend<T> for SortedSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for v in iter {
            self.insert(v);
        }
    }
}

impl<'a, T> IntoIterator for &'a SortedSet<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<T> IntoIterator for SortedSet<T> {
    type Item = T;
    type IntoIter = thin_vec::IntoIter<T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    /// The same operations on a B-tree and on a sorted vector leave the same entries, in the
    /// same order, and the same answers.
    #[test]
    fn behaves_as_the_b_trees() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let (mut bm, mut sm) = (BTreeMap::new(), SortedMap::new());
        let (mut bs, mut ss) = (BTreeSet::new(), SortedSet::new());
        for _ in 0..5_000 {
            let k = (next() % 16) as u8;
            let v = next() % 100;
            match next() % 5 {
                0 | 1 => {
                    assert_eq!(bm.insert(k, v), sm.insert(k, v));
                    assert_eq!(bs.insert(k), ss.insert(k));
                }
                2 => {
                    assert_eq!(bm.remove(&k), sm.remove(&k));
                    assert_eq!(bs.remove(&k), ss.remove(&k));
                }
                3 => {
                    *bm.entry(k).or_insert(0) += v;
                    *sm.entry(k).or_insert(0) += v;
                }
                _ => {
                    bm.retain(|_, x| *x % 3 != 0);
                    sm.retain(|_, x| *x % 3 != 0);
                    bs.retain(|x| *x % 4 != 0);
                    ss.retain(|x| *x % 4 != 0);
                }
            }
            assert!(bm.iter().eq(sm.iter()));
            assert!(bm.range(k..).eq(sm.range(k..)));
            assert!(bm.range(..k).eq(sm.range(..k)));
            assert!(bm.range(k + 1..).eq(sm.range(k + 1..)));
            assert!(bs.iter().eq(ss.iter()));
            assert_eq!(bm.get(&k), sm.get(&k));
            assert_eq!(bs.first(), ss.first());
            assert_eq!(format!("{bm:?}"), format!("{sm:?}"));
            assert_eq!(format!("{bs:?}"), format!("{ss:?}"));
        }
    }
}
