"""Reading tests/c/pool_instances.c's output, and the verdicts it must agree
with: test_worker.py and test_firmware_debian13.py (the worker image built
on each CPython) compare the same way."""

import os

from conftest import split_log


def pool_lines(stdout: str, instances: int) -> list:
    """The per-message lines, once the last line says that ``instances``
    distinct instances were started."""
    *lines, last = stdout.splitlines()
    assert last == f"instances {instances} distinct {instances}"
    return lines


def verdicts(lines: list) -> list:
    """"NAME STATUS DETAIL" of each pool line: what precedes its records."""
    return [line.split(" |", 1)[0] for line in lines]


def library_verdicts(stdout: str, files) -> list:
    """The same of ``dnsshim_test --detail FILE...``'s output, for files in
    the order and the spelling they were passed."""
    log = split_log(stdout)
    out = []
    for path in map(str, files):
        status = next(line.split()[1] for line in log[path] if line.startswith("status "))
        detail = next(line[len("detail "):] for line in log[path] if line.startswith("detail"))
        out.append(f"{os.path.basename(path)} {status} {detail}")
    return out
