"""Values a node's pods alone decide (and, for its pod-level block, its namespaces' PDBs), carried from pass to pass
while the node holds the very same pods.

At 5,000 nodes a pass walked 72k pods for each node's pod-level block, eviction costs, reschedulable pods and
pinned pods, though between two passes ~1% of them change. The worker's cache hands a pass the PodInfo it parsed
last time for every pod whose object is unchanged (runtime/cluster_view.py), so a node whose pods list holds the
same PodInfo objects in the same order as last time has the same pods; its values are reused. Anything else (a pod
added, removed, replaced or reordered) derives them again. A value that also reads the PDBs names the namespaces it
read; each namespace's PDBs are a token (`pdb_tokens`) that is the very object of last time while the namespace's
PDB objects are the same, so a changed, added or removed PDB makes its namespace's values derive again. Values
must not depend on the time (callers do not store those) and are never changed by their readers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import count
from operator import is_
from typing import Any, TypeVar

from planning.pass_store import PassStore

T = TypeVar("T")
NO_PDBS: tuple[Any, ...] = ()  # the token of a namespace without PDBs


def same_objects(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """The same objects in the same order (identity, compared in C)."""
    return len(a) == len(b) and all(map(is_, a, b))


Entry = tuple[int, tuple[Any, ...], Any]  # (the generation of the pods it was derived from, PDB tokens read, value)
_EMPTY: dict[str, Any] = {}


class NodePodsMemo:
    """(what, node name) -> (the generation of the pods it was derived from, the PDB tokens it read, the value). A
    node's pods list gets a generation number, the same while it holds the very same pods (checked once per node
    and list, not once per value); values are kept per `what` by node name, so lookups leave no new objects for the
    cyclic collector to walk."""

    def __init__(self) -> None:
        self._values: PassStore[str, dict[str, Entry]] = PassStore()  # what -> node name -> entry
        # node name -> (the pods list it last presented, that list's generation)
        self._lists: PassStore[str, tuple[Sequence[Any], int]] = PassStore()
        self._generations = count(1)  # next() is atomic: a pass and a validation may ask at once
        self._tokens: dict[str, tuple[Any, ...]] = {}
        self._answers: dict[str, PdbAnswers] = {}
        self.made = 0  # values derived (not found) since the pass started

    def generation(self, node: str, pods: Sequence[Any]) -> int:
        """The number of the node's pods: the one of last time while they are the same objects in the same order,
        else a new one (never reused)."""
        seen = self._lists.get(node)
        if seen is not None and (seen[0] is pods or same_objects(seen[0], pods)):
            gen = seen[1]
        else:
            gen = next(self._generations)
        self._lists.now[node] = (pods, gen)
        return gen

    def _entry(self, what: str, node: str) -> tuple[dict[str, Entry], Entry | None]:
        now = self._values.now.get(what)
        if now is None:
            now = self._values.now[what] = {}
        return now, now.get(node) or self._values.last.get(what, _EMPTY).get(node)

    def get(self, what: str, node: str, pods: Sequence[Any], make: Callable[[], T]) -> T:
        """`make()`, or what it gave for the node when it held these very pods."""
        gen = self.generation(node, pods)
        now, entry = self._entry(what, node)
        if entry is None or entry[0] != gen:
            entry = (gen, NO_PDBS, make())
            self.made += 1
        now[node] = entry
        return entry[2]  # type: ignore[no-any-return]

    def found(self, what: str, node: str, pods: Sequence[Any], tokens: Mapping[str, tuple[Any, ...]]
              ) -> tuple[bool, Any]:
        """(True, the value) kept for these very pods while the PDBs of the namespaces it read are the same;
        else (False, None), and the caller derives it and `keep`s it."""
        gen = self.generation(node, pods)
        now, entry = self._entry(what, node)
        if entry is None or entry[0] != gen:
            return False, None
        for ns, token in entry[1]:
            if tokens.get(ns, NO_PDBS) is not token:
                return False, None
        now[node] = entry
        return True, entry[2]

    def keep(self, what: str, node: str, pods: Sequence[Any], namespaces: Iterable[str],
             tokens: Mapping[str, tuple[Any, ...]], value: Any) -> None:
        """Keep `value`, derived from `pods` and the PDBs of `namespaces` as `tokens` has them now."""
        read = tuple((ns, tokens.get(ns, NO_PDBS)) for ns in namespaces)
        self._entry(what, node)[0][node] = (self.generation(node, pods), read, value)
        self.made += 1

    def pdb_tokens(self, pdbs: Iterable[Mapping[str, Any]]) -> dict[str, tuple[Any, ...]]:
        """Each namespace's PDB objects as a token: the token of last time while they are the same objects, in
        the same order, else a new one; always a new one for a namespace with a PDB whose allowed disruptions are
        derived from the pods of other nodes (planning/cluster.py pdb_allowed_from_pods). Call once per Cluster."""
        now: dict[str, list[Any]] = {}
        derived: set[str] = set()  # a PDB without status.disruptionsAllowed is judged by every pod it selects
        for raw in pdbs:
            ns = (raw.get("metadata") or {}).get("namespace") or "default"
            now.setdefault(ns, []).append(raw)
            if (raw.get("status") or {}).get("disruptionsAllowed") is None:
                derived.add(ns)
        last = self._tokens
        tokens = {ns: old if ns not in derived and (old := last.get(ns)) is not None and same_objects(old, objs)
                  else tuple(objs) for ns, objs in now.items()}
        self._tokens = tokens  # a namespace that lost its PDBs gets NO_PDBS from `found`, unlike its old token
        return tokens

    def pdb_answers(self, namespace: str, tokens: Mapping[str, tuple[Any, ...]]) -> PdbAnswers:
        """The namespace's PDB answers by label set (planning/disruption/candidates.py), carried while its PDBs are
        the same objects; new (empty) ones when they changed."""
        token = tokens.get(namespace, NO_PDBS)
        got = self._answers.get(namespace)
        if got is None or got.token is not token:
            got = self._answers[namespace] = PdbAnswers(token)
        return got

    def next_pass(self) -> None:
        """Keep what the pass that ends asked for and forget the rest (planning/pass_store.py)."""
        self._values.next_pass()
        self._lists.next_pass()
        for answers in self._answers.values():
            answers.next_pass()
        self.made = 0


READ_ANSWERS_CAP = 50_000  # answers by the labels PDB selectors read kept per namespace, then it starts over


class PdbAnswers:
    """Why a namespace's PDBs stop a pod's eviction (or None), by the pod's labels: `get`/`put` by its whole label
    set and readiness (what a pass did not ask for is dropped at the next, so label sets that are gone do not pile
    up), `get_read`/`put_read` by the labels the PDB selectors read and readiness (about one per workload, kept
    while the namespace's PDBs are the same objects, up to READ_ANSWERS_CAP). `keys`: the label keys the selectors
    read (planning/cluster.py pdb_label_keys)."""

    def __init__(self, token: tuple[Any, ...] = NO_PDBS) -> None:
        self.token = token
        self.keys: tuple[str, ...] | None = None
        self._by_labels: PassStore[Any, str | None] = PassStore()
        self._read: dict[Any, str | None] = {}

    def get(self, key: Any) -> tuple[bool, str | None]:
        """(True, the answer) when kept, else (False, None); an answer may be None (not blocked)."""
        now = self._by_labels.now
        if key in now:
            return True, now[key]
        last = self._by_labels.last
        if key in last:
            found = now[key] = last[key]
            return True, found
        return False, None

    def put(self, key: Any, answer: str | None) -> None:
        self._by_labels.now[key] = answer

    def get_read(self, key: Any) -> tuple[bool, str | None]:
        read = self._read
        return (True, read[key]) if key in read else (False, None)

    def put_read(self, key: Any, answer: str | None) -> None:
        if len(self._read) >= READ_ANSWERS_CAP:
            self._read = {}
        self._read[key] = answer

    def next_pass(self) -> None:
        self._by_labels.next_pass()
