from .init import become_init

become_init()  # as a container's PID 1: init stays behind, the tool runs in its child

from .cli import main  # noqa: E402

raise SystemExit(main())
