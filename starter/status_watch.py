"""`nodeflow status --watch`: the live view of terminations and disruptions, and the tables `status` prints.

On a terminal it redraws in place (the alternate screen, like `watch`) under a fixed header: which cluster the
kubeconfig points at, whether the planner schedule is paused, and the drains stuck behind a PDB or a
do-not-disrupt pod with how long they have run. Piped or redirected it stays line-based for scripts: the header
once, then a line whenever the planner's state, a stuck drain, or a termination's or disruption's row changes
(kubectl `-w` style): nothing at all while nothing changes.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from api.duration import DurationError, parse_duration
from starter.kubeconfig import origin, resolve, server_of
from starter.output import CliError, render_table
from starter.timefmt import rfc3339_utc

# Our modules that load pydantic, temporalio or kubernetes are imported inside the functions that use them:
# this module loads with `nodeflow --help` (starter/cli.py builds every command's parser), which takes 0.13 s
# without them and 0.83 s with them (farm-bench, median).

HEADERS = ["NODE", "NODEPOOL", "REASON", "PHASE", "PODS LEFT", "BLOCKING", "AGE", "DEADLINE"]
DISRUPTION_HEADERS = ["NODES", "NODEPOOL", "METHOD", "REASON", "PHASE", "REPLACEMENTS", "WAITING FOR", "AGE"]
TERMINATION, DISRUPTION = "Termination", "Disruption"
# What the view shows on every refresh: `status`'s rows for the parsed arguments (starter/cmd_status.py's collect)
Collect = Callable[[argparse.Namespace], Awaitable[list[dict[str, Any]]]]


def add_watch_flags(parser: Any) -> None:
    parser.add_argument("-w", "--watch", action="store_true",
                        help="keep watching: on a terminal redraw in place under a header (cluster, planner paused "
                             "or not, stuck drains); piped, print a line per change")
    parser.add_argument("--interval", type=float, default=2.0, metavar="SECONDS",
                        help="seconds between refreshes with --watch (default 2)")
    parser.add_argument("--stuck-after", default="2m", metavar="DURATION",
                        help="with --watch: a drain blocked and running this long is listed as stuck (default 2m)")
    parser.add_argument("--schedule-id", default=None, help="planner schedule id (default nodeflow-planner)")


def blocking_of(row: dict[str, Any]) -> list[str]:
    """What holds a drain: PDBs and do-not-disrupt pods when the workflow reports them, else its PDBs."""
    return list(row.get("blocking") or row.get("blockingPDBs") or [])


def _seconds_since(iso: str | None, now: datetime) -> float | None:
    return None if not iso else (now - datetime.fromisoformat(iso)).total_seconds()


def _short(seconds: float) -> str:
    secs = int(seconds)
    if secs < 120:
        return f"{secs}s"
    return f"{secs // 60}m" if secs < 7200 else f"{secs // 3600}h{(secs % 3600) // 60}m"


def stuck_drains(rows: Sequence[dict[str, Any]], now: datetime, after: timedelta) -> list[dict[str, Any]]:
    """Running drains that something blocks and that have run `after` or longer, oldest first."""
    out = []
    for row in rows:
        age = _seconds_since(row.get("startedAt"), now)
        drain = row.get("kind", TERMINATION) == TERMINATION and row.get("phase") == "Draining"
        if drain and blocking_of(row) and age is not None and age >= after.total_seconds():
            out.append({"node": row.get("node"), "blocking": blocking_of(row), "age": row.get("age") or _short(age),
                        "seconds": age})
    return sorted(out, key=lambda s: -s["seconds"])


def kubeconfig_line(args: argparse.Namespace) -> str:
    kubeconfig = resolve(args.kubeconfig)
    if kubeconfig is None:
        return "KUBECONFIG: none (nodes are matched by name in Temporal)"
    server = server_of(kubeconfig, args.context)
    where = f"server {server}" if server else "cannot be loaded"
    return f"KUBECONFIG: {kubeconfig} (from {origin(args.kubeconfig)}; {where})"


async def planner_line(client: Any, schedule_id: str | None) -> str:
    """`planner: running (last pass 4s ago)`, `planner: PAUSED (note) ...`, or why it is unknown."""
    from temporalio.service import RPCError, RPCStatusCode

    from client.planner_schedule import PLANNER_SCHEDULE_ID

    sid = schedule_id or PLANNER_SCHEDULE_ID
    try:
        desc = await client.get_schedule_handle(sid).describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return f"planner: no schedule {sid} (the worker creates it when it starts)"
        return f"planner: unknown ({exc.message})"
    state = desc.schedule.state
    if state.paused:
        note = f" ({state.note})" if state.note else ""
        return f"planner: PAUSED{note}: voluntary disruption is stopped; `nodeflow resume` restarts it"
    actions = desc.info.recent_actions
    if not actions:
        return "planner: running (no pass yet)"
    return f"planner: running (last pass {_short((_now() - actions[-1].started_at).total_seconds())} ago)"


def _now() -> datetime:
    return datetime.now(UTC)


def header(clock: str, target: str, kube: str, planner: str, stuck: list[dict[str, Any]], after: str) -> list[str]:
    lines = [f"nodeflow status --watch   {clock}   Temporal {target}   (Ctrl-C to stop)", kube, planner]
    if not stuck:
        return [*lines, f"stuck drains (blocked, running {after} or more): none"]
    lines.append(f"stuck drains (blocked, running {after} or more): {len(stuck)}")
    width = max(len(str(s["node"])) for s in stuck)
    lines += [f"  {str(s['node']).ljust(width)}   {s['age']:>6}   blocked by {', '.join(s['blocking'])}"
              for s in stuck]
    return lines


def blocking_cell(row: dict[str, Any]) -> str | None:
    """The BLOCKING column: PDBs and do-not-disrupt pods, then what a drain.jobs Wait waits for (docs/semantics.md
    §15.8), e.g. "waiting for 2 Job pods, longest running 14m"."""
    parts = [",".join(blocking_of(row)), row.get("waiting") or ""]
    return "; ".join(p for p in parts if p) or None


def row_cells(row: dict[str, Any]) -> list[Any]:
    return [row["node"], row["nodePool"], row["reason"], row["phase"], row["podsLeft"],
            blocking_cell(row), row["age"], rfc3339_utc(row["deadline"])]


def disruption_cells(row: dict[str, Any]) -> list[Any]:
    replacements = ", ".join(f"{r['nodeClaim']} {r['state']}" for r in row.get("replacements") or [])
    return [",".join(row.get("nodes") or []) or None, row.get("nodePool"), row.get("method"), row.get("reason"),
            row.get("phase"), replacements or None, waiting_for(row), row.get("age")]


def waiting_for(row: dict[str, Any]) -> str | None:
    """What a disruption waits for, in words, from its typed `waitingFor` (client/disruption_status.py)."""
    from client.disruption_status import DisruptionWait

    try:
        wait = DisruptionWait(row.get("waitingFor"))
    except ValueError:
        return None
    text = {
        DisruptionWait.START: "its first step",
        DisruptionWait.VALIDATION: "validation (the delay, then a re-plan that must agree)",
        DisruptionWait.PRE_DISRUPTION_ACK: "the pre-disruption hook's ack (or `nodeflow approve NODE`)",
        DisruptionWait.TAINT: "the candidates' taint",
        DisruptionWait.LAUNCH: "replacements to launch",
        DisruptionWait.REPLACEMENTS_READY: _ready_text(row),
        DisruptionWait.ROLLBACK: "its rollback (untaint, delete replacements not Ready)",
        DisruptionWait.TERMINATIONS: "the terminations of its nodes",
        DisruptionWait.NOTHING: None,
    }[wait]
    if row.get("cancelRequested") and text:
        text += "; cancel requested"
    return text


def _ready_text(row: dict[str, Any]) -> str:
    reps = row.get("replacements") or []
    text = f"replacements Ready: {sum(r['state'] == 'Ready' for r in reps)} of {len(reps)}"
    deadline = row.get("readyDeadline")
    if deadline:
        text += f", until {rfc3339_utc(deadline)}"
    return text


def table_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The terminations' table, a blank line, the disruptions' table (each only when it has rows)."""
    terms = [r for r in rows if r.get("kind", TERMINATION) == TERMINATION]
    disruptions = [r for r in rows if r.get("kind") == DISRUPTION]
    if not terms and not disruptions:
        return ["No terminations or disruptions in flight."]
    parts = []
    if terms:
        parts.append(render_table(HEADERS, [row_cells(r) for r in terms]).splitlines())
    if disruptions:
        parts.append(render_table(DISRUPTION_HEADERS, [disruption_cells(r) for r in disruptions]).splitlines())
    return [*parts[0], *([""] + parts[1] if len(parts) > 1 else [])]


class TerminalScreen:
    """Redraws the whole view in place on the alternate screen; the body is cut to the terminal's height."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.started = False

    def show(self, head: list[str], body: list[str]) -> None:
        if not self.started:
            self.out.write("\x1b[?1049h")  # the alternate screen: the shell's scrollback is back on exit
            self.started = True
        size = shutil.get_terminal_size()
        room = max(size.lines - len(head) - 2, 1)
        if len(body) > room:
            body = [*body[:room - 1], f"... {len(body) - room + 1} more (nodeflow status -o json lists all)"]
        lines = [*head, "", *body]
        self.out.write("\x1b[H" + "".join(f"{line[:size.columns]}\x1b[K\n" for line in lines) + "\x1b[J")
        self.out.flush()

    def close(self) -> None:
        if self.started:
            self.out.write("\x1b[?1049l")
            self.out.flush()


class LineLog:
    """For pipes and logs: the kubeconfig line once, then one line per change (planner state, stuck drain, a
    termination's or disruption's row, one that ended); each kind's column header before its first row."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.started = False
        self.planner = ""
        self.stuck: dict[str, str] = {}
        self.rows: dict[str, tuple[str, tuple[Any, ...], list[Any]]] = {}  # workflow id -> (kind, what changes, cells)
        self.titled: set[str] = set()  # kinds whose column header was printed

    def show(self, kube: str, planner: str, stuck: list[dict[str, Any]], rows: list[dict[str, Any]],
             finished: dict[str, str]) -> None:
        lines: list[str] = []
        if not self.started:
            lines.append(kube)
            self.started = True
        if planner != self.planner:
            lines.append(planner)
            self.planner = planner
        now_stuck = {str(s["node"]): ", ".join(s["blocking"]) for s in stuck}
        lines += [f"stuck drain: {s['node']} running {s['age']}, blocked by {now_stuck[str(s['node'])]}"
                  for s in stuck if self.stuck.get(str(s["node"])) != now_stuck[str(s["node"])]]
        self.stuck = now_stuck
        lines += self._changed_rows(rows, finished)
        if lines:
            self.out.write("\n".join(lines) + "\n")
            self.out.flush()

    def _changed_rows(self, rows: list[dict[str, Any]], finished: dict[str, str]) -> list[str]:
        changed: dict[str, list[list[Any]]] = {TERMINATION: [], DISRUPTION: []}
        for row in rows:
            kind = row.get("kind", TERMINATION)
            key, cells = _change_key(row), _cells(row)
            old = self.rows.get(row["workflowId"])
            if old is None or old[1] != key:
                changed[kind].append(cells)
                self.rows[row["workflowId"]] = (kind, key, cells)
        for wid, status in finished.items():
            gone = self.rows.pop(wid, None)
            if gone is not None:  # the row as last seen, with how it ended
                kind, _, cells = gone
                keep = 3 if kind == TERMINATION else 4
                changed[kind].append([*cells[:keep], status, *[None] * (len(cells) - keep - 1)])
        lines: list[str] = []
        for kind, cells_list in changed.items():
            if cells_list:
                table = render_table(HEADERS if kind == TERMINATION else DISRUPTION_HEADERS, cells_list).splitlines()
                lines += table if kind not in self.titled else table[1:]
                self.titled.add(kind)
        return lines


def _change_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """What makes a row worth a new line (not its age)."""
    if row.get("kind", TERMINATION) == TERMINATION:
        return row["phase"], row["podsLeft"], tuple(blocking_of(row)), row["status"]
    states = tuple((r["nodeClaim"], r["state"]) for r in row.get("replacements") or [])
    return row.get("phase"), row.get("status"), states, row.get("waitingFor"), row.get("cancelRequested")


def _cells(row: dict[str, Any]) -> list[Any]:
    return row_cells(row) if row.get("kind", TERMINATION) == TERMINATION else disruption_cells(row)


def watch(args: argparse.Namespace, collect: Collect, out: TextIO | None = None, polls: int | None = None) -> int:
    """Run the live view of `collect`'s rows until Ctrl-C (or `polls` refreshes, for tests)."""
    if args.output != "table":
        raise CliError("--watch shows a table; use -o json or -o yaml without --watch", 2)
    if args.interval <= 0:
        raise CliError("--interval must be positive", 2)
    try:
        after = parse_duration(args.stuck_after)
    except DurationError as exc:
        raise CliError(f"--stuck-after: {exc}", 2) from exc
    out = out or sys.stdout
    tty = bool(getattr(out, "isatty", lambda: False)())
    return asyncio.run(_loop(args, collect, out, tty, after, polls))


async def _loop(args: argparse.Namespace, collect: Collect, out: TextIO, tty: bool, after: timedelta,
                polls: int | None) -> int:
    from starter.temporal import connect_from_args

    args.temporal_client = await connect_from_args(args)  # reused by collect() on every refresh
    target = f"{args.temporal_client.service_client.config.target_host}/{args.temporal_client.namespace}"
    kube = await asyncio.to_thread(kubeconfig_line, args)
    screen, log = (TerminalScreen(out), None) if tty else (None, LineLog(out))
    seen: set[str] = set()
    last_rows: list[dict[str, Any]] = []
    count = 0
    try:
        while polls is None or count < polls:
            count += 1
            try:
                rows = await collect(args)
                planner = await planner_line(args.temporal_client, args.schedule_id)
            except CliError as exc:  # Temporal unreachable for a moment: say so and keep watching
                rows, planner = last_rows, f"planner: unknown; error: {exc}"
            last_rows = rows
            now = _now()
            stuck = stuck_drains(rows, now, after)
            if screen is not None:
                head = header(now.strftime("%H:%M:%S UTC"), target, kube, planner, stuck, args.stuck_after)
                screen.show(head, table_lines(rows))
            elif log is not None:
                current = {r["workflowId"] for r in rows}
                finished = await _finished(args.temporal_client, seen - current)
                seen = current
                log.show(kube, planner, stuck, rows, finished)
            if polls is None or count < polls:
                await asyncio.sleep(args.interval)
    finally:
        if screen is not None:
            screen.close()
    return 0


async def _finished(client: Any, gone: set[str]) -> dict[str, str]:
    """How the terminations and disruptions that left the running list ended (COMPLETED, CANCELED, FAILED, ...)."""
    out = {}
    for wid in sorted(gone):
        try:
            desc = await client.get_workflow_handle(wid).describe()
            out[wid] = desc.status.name if desc.status else "FINISHED"
        except Exception:
            out[wid] = "FINISHED"
    return out
