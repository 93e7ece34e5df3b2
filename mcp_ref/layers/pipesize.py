"""A larger kernel buffer for the protocol's stdout pipe (Linux): fewer writes per large answer.

A Linux pipe holds 64 KiB by default, so an 8 MiB image (11 MiB of base64 on one line) left in
~170 ``writev`` calls, each a wake-up of the loop and of the client: a fifth of the time
``read_media_file`` took. ``widen_pipe`` asks the kernel (``fcntl.F_SETPIPE_SZ``) for
``PIPE_BYTES``, the most an unprivileged process may ask for by default
(``/proc/sys/fs/pipe-max-size``), and the same answer leaves in about a dozen.

The cost is kernel memory, not ours: the pipe may hold up to ``PIPE_BYTES`` the client has not
read yet (pages are taken as bytes arrive, and freed as they are read). The kernel counts it
against the user who made the pipe (``/proc/sys/fs/pipe-user-pages-soft``, 64 MiB by default)
and refuses a growth past that: then the pipe keeps its size (and a new pipe of a user over it
starts at 8 KiB: a reason to widen only the one pipe that gains). Bounded memory and backpressure are
unchanged: the output queue (``stdout._Output``) counts what the kernel has not taken, which is
all that stays in the process; a client that does not read leaves up to 1 MiB in the pipe, not
64 KiB, before that queue starts to grow.

Only stdout, and only a pipe (``streams.open_fd_streams``): a socket, TTY or file is left as it
is. Not stdin: the shell reads 64 KiB at a time whatever the pipe holds
(``streams.READ_CHUNK_BYTES``), so a larger input pipe would save only the client's wake-ups
(an 8 MiB ``write_file`` took the same either way), while letting more of the input the session
holds back sit in the kernel. Anything in the way
(not Linux, not a pipe, the limits above, a sandbox refusing ``fcntl``) leaves the pipe as it
was, silently: only the speed differs.
"""

from __future__ import annotations

import os
import stat

# What the protocol's stdout pipe is asked to hold: the usual unprivileged maximum.
PIPE_BYTES = 1024 * 1024


def widen_pipe(fd: int, size: int = PIPE_BYTES) -> int | None:
    """Make the pipe ``fd`` hold at least ``size`` bytes if the kernel allows; return what it
    holds then, or ``None`` when ``fd`` is no pipe or its size cannot be asked (not Linux). Never
    shrinks a pipe, and never raises."""
    try:
        import fcntl

        get_size, set_size = fcntl.F_GETPIPE_SZ, fcntl.F_SETPIPE_SZ  # type: ignore[attr-defined,unused-ignore]
    except (ImportError, AttributeError):
        return None  # not Linux (or Python without the constants)
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        held: int = fcntl.fcntl(fd, get_size)
        if held < size:
            held = fcntl.fcntl(fd, set_size, size)
    except OSError:  # EPERM past the user's pipe pages or pipe-max-size; EBUSY; a sandbox
        try:
            held = fcntl.fcntl(fd, get_size)
        except OSError:
            return None
    return held
