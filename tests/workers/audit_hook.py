"""An audit hook for the processes root runs in the isolation tests (tests/test_action_
isolation_invariants.py): installed by a .pth file in the image's virtualenv for the time of
the test, it does nothing unless AGENT_EVAL_AUDIT_DIR is set and the process is root's.

Each root process writes one JSON line per watched event to AUDIT_DIR/<pid>.jsonl: the
event, its arguments (plain values), the current folder, and the innermost frame of the
tool's own code that caused it (`caller`, a path inside the package); at exit, the files of
every module it imported.
"""

import atexit
import json
import os
import sys

WATCHED = frozenset(
    {
        "open",
        "os.chmod",
        "os.chown",
        "os.rename",
        "os.mkdir",
        "os.remove",
        "os.rmdir",
        "os.symlink",
        "os.link",
        "os.truncate",
        "os.utime",
        "shutil.rmtree",
        "shutil.copyfile",
        "shutil.move",
        "subprocess.Popen",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "os.fork",
        "os.forkpty",
        "pty.spawn",
        "agent_eval_action.launch",
    }
)
PACKAGE = os.sep + "agent_eval_action" + os.sep


def _plain(value):
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return repr(type(value))


def _install(folder):
    log = os.open(
        os.path.join(folder, f"{os.getpid()}.jsonl"),
        os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
        0o600,
    )
    busy = []

    def write(record):
        os.write(log, (json.dumps(record) + "\n").encode())

    def caller():
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if PACKAGE in name:
                return name.split(PACKAGE, 1)[1]
            frame = frame.f_back
        return None

    def hook(event, args):
        if busy or event not in WATCHED:
            return
        busy.append(1)
        try:
            if event == "subprocess.Popen":
                args = args[:3]  # not the environment
            write(
                {
                    "event": event,
                    "args": _plain(list(args)),
                    "cwd": os.getcwd(),
                    "caller": caller(),
                    "pid": os.getpid(),
                }
            )
        finally:
            busy.pop()

    def modules():
        busy.append(1)
        files = sorted(
            {
                getattr(m, "__file__", None)
                for m in list(sys.modules.values())
                if getattr(m, "__file__", None)
            }
        )
        write({"event": "modules", "args": files, "argv": sys.argv, "pid": os.getpid()})

    sys.addaudithook(hook)
    atexit.register(modules)


_folder = os.environ.get("AGENT_EVAL_AUDIT_DIR")
if _folder and os.geteuid() == 0:
    _install(_folder)
