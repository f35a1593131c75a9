"""Run the real `nodeflow` CLI from async tests (in a thread: the CLI runs its own event loop)."""

from __future__ import annotations

import asyncio
import contextlib
import io

from temporalio.client import Client

from starter import cli


async def nodeflow(client: Client, *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `nodeflow ARGV --address <the test's Temporal server>`."""
    address = client.service_client.config.target_host
    out, err = io.StringIO(), io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                return cli.run([*argv, "--address", address])
            except SystemExit as exc:  # argparse usage errors
                return int(exc.code or 0)

    code = await asyncio.to_thread(run)
    return code, out.getvalue(), err.getvalue()
