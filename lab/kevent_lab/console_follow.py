"""Follows a host's console log while the host runs, reading each byte once.

The driver looks at every console ten times a second (has the host reached
userspace, which testcases ended). Reading the whole file each time costs
its size each time: a guest that floods its console makes that quadratic.
A follower keeps its place and hands out only the complete lines that
arrived since the last look.
"""

from __future__ import annotations

from pathlib import Path

from .guest_text import MAX_LINE

# At most this much is read per look; the rest waits for the next one.
CHUNK = 1 << 20


class ConsoleFollower:
    def __init__(self, path: Path):
        self.path = path
        self.offset = 0          # bytes of the file taken so far
        self.partial = b''       # the start of a line whose end has not come yet

    def new_lines(self) -> list[str]:
        """The complete lines that arrived since the last call."""
        try:
            with open(self.path, 'rb') as f:
                f.seek(self.offset)
                data = f.read(CHUNK)
        except FileNotFoundError:
            return []
        self.offset += len(data)
        data = self.partial + data
        *complete, self.partial = data.split(b'\n')
        if len(self.partial) > MAX_LINE:
            # A line without end: what has come of it counts as a line.
            complete.append(self.partial)
            self.partial = b''
        return [line[:MAX_LINE].rstrip(b'\r').decode(errors='replace') for line in complete]
