"""Process statistics from /proc (Linux): RSS, descriptors, threads, CPU, children, groups."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import trio


def status(pid: int) -> dict[str, str]:
    """/proc/PID/status as a dict ({} when the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def rss_kb(pid: int) -> int:
    """VmRSS in KiB (0 when the process is gone)."""
    return int(status(pid).get("VmRSS", "0 kB").split()[0])


def hwm_kb(pid: int) -> int:
    """VmHWM (peak RSS) in KiB (0 when the process is gone)."""
    return int(status(pid).get("VmHWM", "0 kB").split()[0])


def threads(pid: int) -> int:
    return int(status(pid).get("Threads", "0"))


def memory_threads(pid: int) -> int:
    """The server's memory-lane threads: those the OS names `lwc-memory-N` (the lanes name
    their threads, `lanes._name_os_thread`); 0 when the process is gone."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return 0
    count = 0
    for task in tasks:
        try:
            count += (task / "comm").read_text().startswith("lwc-memory-")
        except OSError:
            continue  # the thread ended meanwhile
    return count


def stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgid) from /proc/PID/stat, or None when gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[2])


def cpu_s(pid: int) -> float:
    """User + system CPU the process has used so far, all threads (clock-tick resolution)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main_thread_cpu_s(pid: int) -> float:
    """User + system CPU of the process's main thread only (for a Trio server: its loop)."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace")


def fd_count(pid: int) -> int:
    """Open descriptors of the process; -1 when unreadable."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def rchar(pid: int) -> int:
    """Bytes this process has read (any descriptor), from /proc/PID/io; -1 when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            if line.startswith("rchar:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


def all_pids() -> Iterator[int]:
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            yield int(entry.name)


def children_of(pid: int) -> list[dict[str, Any]]:
    """Processes whose parent is `pid`: pid, state, pgid, cmd."""
    out = []
    for child in all_pids():
        st = stat(child)
        if st is not None and st[1] == pid:
            out.append({"pid": child, "state": st[0], "pgid": st[2], "cmd": cmdline(child)})
    return out


def codegraph_children(server_pid: int) -> list[dict[str, Any]]:
    """The server's CodeGraph child processes."""
    return [c for c in children_of(server_pid) if "codegraph" in c["cmd"]]


def group_members(pgid: int) -> list[int]:
    """Live pids (zombies included) in process group `pgid`."""
    return [p for p in all_pids() if (s := stat(p)) is not None and s[2] == pgid]


async def groups_after_exit(pgids: set[int], wait: float = 5.0) -> dict[str, Any]:
    """What is left of the CodeGraph process groups once the server has exited.

    `live`: members not yet dead (state other than Z) right at exit — lwc must leave none.
    `zombies`: dead members not yet reaped. The CodeGraph child's own helper process (a
    watchdog it forks into the same group) is SIGKILLed with the group; its parent dies too,
    so it is re-parented to PID 1 and reaping it is init's job, not lwc's. `gone_s`: how long
    until no member was left at all (None: still there after `wait` seconds).
    """
    members = [(p, stat(p)) for g in pgids for p in group_members(g)]
    live = [p for p, st in members if st is not None and st[0] != "Z"]
    zombies = [p for p, st in members if st is not None and st[0] == "Z"]
    t0 = time.perf_counter()
    gone: float | None = None
    while time.perf_counter() - t0 < wait:
        if not any(group_members(g) for g in pgids):
            gone = round(time.perf_counter() - t0, 3)
            break
        await trio.sleep(0.01)
    return {"live": len(live), "zombies": len(zombies), "gone_s": gone}


def sample(server_pid: int, calls: int, started: float) -> dict[str, Any]:
    """One resource sample of the server process."""
    st = status(server_pid)
    rss = int(st.get("VmRSS", "0 kB").split()[0])
    kids = children_of(server_pid)
    zombies = [k for k in kids if k["state"] == "Z"]
    cg = [k for k in kids if "codegraph" in k["cmd"]]
    group = 0
    for kid in cg:  # whatever the CodeGraph child forked (its own watchdog process)
        members = group_members(kid["pgid"])
        group += len(members)
        for member in members:
            member_stat = stat(member)
            if member != kid["pid"] and member_stat is not None and member_stat[0] == "Z":
                zombies.append({"pid": member, "state": "Z"})
    return {
        "calls": calls,
        "elapsed_s": round(time.perf_counter() - started, 1),
        "rss_mb": round(rss * 1024 / 1e6, 2),
        "fds": fd_count(server_pid),
        "threads": int(st.get("Threads", "0")),
        "memory_threads": memory_threads(server_pid),
        "children": len(kids),
        "codegraph": len(cg),
        "codegraph_pids": [k["pid"] for k in cg],
        "codegraph_group": group,
        "zombies": len(zombies),
    }
