"""Registering `lwc serve --mcp` with agent hosts, and `lwc doctor`.

Modules, bottom up: `jsonc` and `tomlconf` (text-preserving edits of one server entry), `hosts`
(where each host keeps servers and the entry it gets), `merge` (pure install/uninstall/status
plans, each verified by re-parsing), `files` (backup and atomic write) and `doctor` (the read-only
readiness report). Synchronous and trio-free; the CLI front is `lwc_trio.cli.agent`.
"""

from lwc_trio.agents.doctor import doctor_report
from lwc_trio.agents.files import backup_path, backup_root, decode, read_config, write_config
from lwc_trio.agents.hosts import (
    ENTRY_NAME,
    HOSTS,
    Host,
    desired_entry,
    entry_matches,
    find_host,
    host_names,
)
from lwc_trio.agents.merge import Inspection, Plan, inspect, plan_install, plan_uninstall
from lwc_trio.exceptions import AgentError, ConfigSyntaxError, DuplicateKeyError

__all__ = [
    "ENTRY_NAME",
    "HOSTS",
    "AgentError",
    "ConfigSyntaxError",
    "DuplicateKeyError",
    "Host",
    "Inspection",
    "Plan",
    "backup_path",
    "backup_root",
    "decode",
    "desired_entry",
    "doctor_report",
    "entry_matches",
    "find_host",
    "host_names",
    "inspect",
    "plan_install",
    "plan_uninstall",
    "read_config",
    "write_config",
]
