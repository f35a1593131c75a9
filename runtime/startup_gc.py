"""The cyclic garbage collector around a process's start-up.

Loading the modules allocates hundreds of thousands of objects that live as long as the process (modules, classes,
pydantic schemas) and little garbage, yet the collector ran 257 times (2 full passes) during the worker's imports,
0.3-0.46 of its 2.5 CPU-s, and 691 times (5 full) during the EC2 stand-in's, 0.75 of 2.1 CPU-s. `pause()` before
the imports and `resume()` once they are done spend no pass at all: a full pass over the ~140,000 objects then alive
took 0.27 CPU-s to find ~4,500 unreachable ones (well under a MiB, from the imports alone), which `resume()` freezes
with the rest rather than spend a tenth of a start on them.
"""

from __future__ import annotations

import gc


def pause() -> None:
    """No cyclic collection until `resume()`."""
    gc.disable()


def resume() -> None:
    """What the imports allocated moved to the permanent generation (later full passes do not walk it), the collector
    back on."""
    gc.freeze()
    gc.enable()
