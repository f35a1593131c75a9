"""`nodeflow status --watch`: the live view of terminations.

On a terminal it redraws in place (the alternate screen, like `watch`) under a fixed header: which cluster the
kubeconfig points at, whether the planner schedule is paused, and the drains stuck behind a PDB or a
do-not-disrupt pod with how long they have run. Piped or redirected it stays line-based for scripts: the header
once, then a line whenever the planner's state, a stuck drain or a termination's row changes (kubectl `-w` style).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from starter.output import CliError, render_table

HEADERS = ["NODE", "NODEPOOL", "REASON", "PHASE", "PODS LEFT", "BLOCKING", "AGE", "DEADLINE"]


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
        if row.get("phase") == "Draining" and blocking_of(row) and age is not None and age >= after.total_seconds():
            out.append({"node": row.get("node"), "blocking": blocking_of(row), "age": row.get("age") or _short(age),
                        "seconds": age})
    return sorted(out, key=lambda s: -s["seconds"])


def kubeconfig_line(args: argparse.Namespace) -> str:
    from starter.kubeconfig import origin, resolve, server_of

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
            blocking_cell(row), row["age"], row["deadline"]]


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
    """For pipes and logs: the header once, then one line per change (planner state, stuck drain, row)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.planner = ""
        self.stuck: dict[str, str] = {}
        self.rows: dict[str, tuple[tuple[Any, ...], list[Any]]] = {}  # workflow id -> (what changes, cells)
        self.titled = False

    def show(self, kube: str, planner: str, stuck: list[dict[str, Any]], rows: list[dict[str, Any]],
             finished: dict[str, str]) -> None:
        lines: list[str] = []
        if not self.titled:
            lines.append(kube)
        if planner != self.planner:
            lines.append(planner)
            self.planner = planner
        now_stuck = {str(s["node"]): ", ".join(s["blocking"]) for s in stuck}
        lines += [f"stuck drain: {s['node']} running {s['age']}, blocked by {now_stuck[str(s['node'])]}"
                  for s in stuck if self.stuck.get(str(s["node"])) != now_stuck[str(s["node"])]]
        self.stuck = now_stuck
        changed = []
        for row in rows:
            key = (row["phase"], row["podsLeft"], tuple(blocking_of(row)), row["status"])
            old = self.rows.get(row["workflowId"])
            if old is None or old[0] != key:
                changed.append(row_cells(row))
                self.rows[row["workflowId"]] = (key, row_cells(row))
        for wid, status in finished.items():
            gone = self.rows.pop(wid, None)
            if gone is not None:  # the row as last seen, with how it ended
                changed.append([*gone[1][:3], status, None, None, None, None])
        if changed:
            table = render_table(HEADERS, changed).splitlines()
            lines += table if not self.titled else table[1:]
            self.titled = True
        if lines:
            self.out.write("\n".join(lines) + "\n")
            self.out.flush()


def watch(args: argparse.Namespace, out: TextIO | None = None, polls: int | None = None) -> int:
    """Run the live view until Ctrl-C (or `polls` refreshes, for tests)."""
    from api.duration import DurationError, parse_duration

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
    return asyncio.run(_loop(args, out, tty, after, polls))


async def _loop(args: argparse.Namespace, out: TextIO, tty: bool, after: timedelta, polls: int | None) -> int:
    from starter.cmd_status import collect
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
                screen.show(head, _table_lines(rows, row_cells))
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


def _table_lines(rows: list[dict[str, Any]], cells: Callable[[dict[str, Any]], list[Any]]) -> list[str]:
    if not rows:
        return ["No terminations in flight."]
    return render_table(HEADERS, [cells(r) for r in rows]).splitlines()


async def _finished(client: Any, gone: set[str]) -> dict[str, str]:
    """How the terminations that left the running list ended (COMPLETED, CANCELED, FAILED, ...)."""
    out = {}
    for wid in sorted(gone):
        try:
            desc = await client.get_workflow_handle(wid).describe()
            out[wid] = desc.status.name if desc.status else "FINISHED"
        except Exception:
            out[wid] = "FINISHED"
    return out
