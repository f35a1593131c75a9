"""Make the planning test helpers (`planning_factory`) importable under --import-mode=importlib."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
