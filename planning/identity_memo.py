"""Values derived from objects that are replaced, never modified: kept by the object's identity from pass to pass.

The worker's watch cache replaces a stored object on every change and never modifies one (runtime/informer.py), so
an object that is the very one a pass saw last time derives the same values again; a changed object is a new one.
A memo entry holds its object, so its id cannot be reused while the entry is kept, and an entry is checked by
identity before use, never by id alone. What a pass did not ask for is dropped when the next one starts, and a read
that asked for nothing drops nothing (planning/pass_store.py). Values must be immutable, or copied by the caller
before it changes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import is_, itemgetter, not_
from typing import Any, TypeVar

from planning.node_pods_memo import NodePodsMemo
from planning.pass_store import PassStore

T = TypeVar("T")


class IdentityMemo:
    """(kind, object) -> a value derived from the object alone, carried from one pass to the next. Entries are kept
    per kind by the object's id: the keys are ints, which the cyclic collector does not track, so ~25k lookups a
    pass leave no new objects for it to walk."""

    def __init__(self) -> None:
        self._kinds: PassStore[str, dict[int, tuple[Any, Any]]] = PassStore()  # kind -> id(obj) -> (obj, value)
        self.made = 0  # values derived (not found) since the pass started
        # what a node's pods decide, by node name while it holds the very same PodInfos (planning/node_pods_memo.py)
        self.nodes = NodePodsMemo()

    def get(self, kind: str, obj: Any, make: Callable[[Any], T]) -> T:
        """`make(obj)`, or what it gave for this very object this pass or the last."""
        key = id(obj)
        now = self._kinds.now.get(kind)
        if now is None:
            now = self._kinds.now[kind] = {}
        entry = now.get(key) or self._kinds.last.get(kind, _EMPTY).get(key)
        if entry is None or entry[0] is not obj:
            entry = (obj, make(obj))
            self.made += 1
        now[key] = entry
        return entry[1]  # type: ignore[no-any-return]

    def get_all(self, kind: str, objs: Sequence[Any], make: Callable[[Any], T]) -> list[T]:
        """`[get(kind, o, make) for o in objs]`, with the lookups and identity checks in C (a pass asks this of
        every Node, NodeClaim and PDB): Python visits only the objects not found in the last pass's entries."""
        now = self._kinds.now.get(kind)
        if now is None:
            now = self._kinds.now[kind] = {}
        ids = list(map(id, objs))
        entries = list(map(self._kinds.last.get(kind, _EMPTY).get, ids, repeat(_NONE)))
        for i in compress(range(len(ids)), map(not_, map(is_, map(_OBJ, entries), objs))):
            obj = objs[i]
            entry = now.get(ids[i])
            if entry is None or entry[0] is not obj:
                entry = (obj, make(obj))
                self.made += 1
            entries[i] = entry
        now.update(zip(ids, entries, strict=True))
        return list(map(_VALUE, entries))

    def next_pass(self) -> None:
        """Keep what the pass that ends asked for and forget the rest (planning/pass_store.py)."""
        self._kinds.next_pass()
        self.made = 0
        self.nodes.next_pass()


_EMPTY: dict[int, tuple[Any, Any]] = {}
_NONE = (None, None)  # never an entry of the object looked up
_OBJ, _VALUE = itemgetter(0), itemgetter(1)
