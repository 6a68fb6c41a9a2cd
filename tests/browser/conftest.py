"""
Browser suite: the real `kevald serve` (tests/pylib/kevaldserver.py) holding
real results, and the built-in dashboard driven in headless Chromium
(cdp.py). Screenshots go to <build>/tests/browser/screenshots/.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "pylib"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from kevaldserver import (BUILD_ROOT, LIBEXEC, SLOW, SOURCE_ROOT, Server, assert_stopped_cleanly,  # noqa: E402,F401
                          pytest_runtest_makereport, tmp_module)

Server.tasks = SOURCE_ROOT / "tests" / "fixtures" / "tasks"
Server.tmp_prefix = "kevald-browser-"
SCREENSHOTS = BUILD_ROOT / "tests" / "browser" / "screenshots"
