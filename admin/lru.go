package admin

import "container/list"

// lru is a map that holds at most max keys and forgets the least recently
// set one to make room for another. It is not safe for concurrent use;
// its owner guards it.
type lru[K comparable, V any] struct {
	max   int
	items map[K]*list.Element // each element's Value is a *lruItem[K, V]
	order list.List           // front: the most recently set
	// forgot, if set, is called with each key set forgets to make room.
	forgot func(K)
}

type lruItem[K comparable, V any] struct {
	key K
	val V
}

// newLRU returns an lru that holds at most n keys.
func newLRU[K comparable, V any](n int) *lru[K, V] {
	return &lru[K, V]{max: n, items: make(map[K]*list.Element)}
}

// get returns k's value.
func (l *lru[K, V]) get(k K) (V, bool) {
	if e, ok := l.items[k]; ok {
		return e.Value.(*lruItem[K, V]).val, true
	}
	var zero V
	return zero, false
}

// set sets k's value and makes it the most recent key, forgetting the
// least recent one if a new key would make more than max, and reports
// whether k is new. Updating a key allocates nothing.
func (l *lru[K, V]) set(k K, v V) (added bool) {
	if e, ok := l.items[k]; ok {
		e.Value.(*lruItem[K, V]).val = v
		l.order.MoveToFront(e)
		return false
	}
	if l.max <= 0 {
		return false
	}
	if len(l.items) >= l.max {
		old := l.order.Back()
		key := old.Value.(*lruItem[K, V]).key
		l.order.Remove(old)
		delete(l.items, key)
		if l.forgot != nil {
			l.forgot(key)
		}
	}
	l.items[k] = l.order.PushFront(&lruItem[K, V]{key: k, val: v})
	return true
}

// delete forgets k, if it is held.
func (l *lru[K, V]) delete(k K) {
	if e, ok := l.items[k]; ok {
		l.order.Remove(e)
		delete(l.items, k)
	}
}

// len returns the number of keys held.
func (l *lru[K, V]) len() int { return len(l.items) }

// each calls fn for every key and value, the most recently set first.
func (l *lru[K, V]) each(fn func(K, V)) {
	for e := l.order.Front(); e != nil; e = e.Next() {
		it := e.Value.(*lruItem[K, V])
		fn(it.key, it.val)
	}
}
