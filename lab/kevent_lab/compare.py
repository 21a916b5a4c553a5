"""One lab run on two kernels, test by test: the kernel's own suites (lab
suites, suites-quick) on the kevent kernel and on the same kernel without
the series (PROFILE=vanilla).

A test whose verdict is the same on both passes the comparison, whatever
that verdict is: a selftest that fails on both fails for a reason the
series did not bring (UML, the lab's config), and the report names every
one of those, with the reason the kernel printed. A verdict that differs,
or a test that ran on one kernel only, fails it. Skipped on both is a skip.
Only the lab's own suites (its run lines) and `kernel` (console, boot,
timeouts) are compared, and `kernel`'s tests must pass on both: a host that
hung or never booted on both kernels compared nothing. the series' KUnit suites print on the kevent
kernel's console alone, and make kunit checks them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .results import HostResult, TestRecord

KERNEL_SUITE = 'kernel'
SIDES = ('kevent', 'vanilla')


@dataclass
class Pair:
    """One test on both kernels; None where it did not run."""
    host: str
    suite: str
    name: str
    kevent: TestRecord | None
    vanilla: TestRecord | None

    @property
    def verdicts(self) -> tuple[str, str]:
        return tuple(t.status if t else 'absent' for t in (self.kevent, self.vanilla))

    @property
    def status(self) -> str:
        k, v = self.verdicts
        if k != v:
            return 'fail'
        if self.suite == KERNEL_SUITE and k != 'pass':
            # A host that never booted, hung or printed a kernel report on
            # both kernels compared nothing: never a match.
            return 'fail'
        return 'skip' if k == 'skip' else 'pass'

    def message(self) -> str:
        k, v = self.verdicts
        head = (f'kevent kernel: {k}, without the series: {v}' if k != v else
                f'{k} on both kernels')
        said = [(side, t.message.strip()) for side, t in zip(SIDES, (self.kevent, self.vanilla))
                if t and t.message.strip()]
        if len(said) == 2 and said[0][1] == said[1][1]:
            said = [('both', said[0][1])]
        return '\n'.join([head] + [f'[{side}] {text}' for side, text in said])


@dataclass
class Comparison:
    pairs: list[Pair]
    ignored: dict[str, int]         # suite -> tests on one kernel that are not compared

    @property
    def differing(self) -> list[Pair]:
        return [p for p in self.pairs if p.status == 'fail']

    def same(self, verdict: str) -> list[Pair]:
        return [p for p in self.pairs if p.status != 'fail' and p.verdicts[0] == verdict]

    def hosts(self) -> list[HostResult]:
        """The comparison as a lab's results: a test per compared test."""
        out: dict[str, HostResult] = {}
        for p in self.pairs:
            h = out.setdefault(p.host, HostResult(p.host, '', None, None))
            msg = p.message() if p.status != 'pass' else ''
            h.tests.append(TestRecord(p.host, p.suite, p.name, p.status, None, msg))
        return list(out.values())

    def report(self) -> str:
        lines = [f'{len(self.pairs)} tests compared: {len(self.same("pass"))} pass on both, '
                 f'{len(self.same("fail"))} fail on both, {len(self.same("skip"))} skipped on both, '
                 f'{len(self.differing)} failed']
        for title, pairs in (('FAILED (a verdict that differs, or a host in trouble):', self.differing),
                             ('failing on both kernels (not the series\'; the reason each printed):',
                              self.same('fail'))):
            if pairs:
                lines += ['', title]
                for p in pairs:
                    lines.append(f'  {p.host}: {p.suite}: {p.name}')
                    lines += [f'      {m}' for m in p.message().splitlines()[:8]]
        if self.ignored:
            lines += ['', 'not compared (printed by one kernel only, checked elsewhere): '
                      + ', '.join(f'{s} ({n})' for s, n in sorted(self.ignored.items()))]
        return '\n'.join(lines)


def compare(kevent: list[HostResult], vanilla: list[HostResult], suites: set[str]) -> Comparison:
    """Pairs the tests of two runs of one lab; @suites are its run lines' suites."""
    wanted = suites | {KERNEL_SUITE}
    keyed: dict[tuple[str, str, str], list[TestRecord | None]] = {}
    ignored: dict[str, int] = {}
    for i, hosts in enumerate((kevent, vanilla)):
        seen: dict[tuple[str, str, str], int] = {}
        for h in hosts:
            for t in h.tests:
                if t.suite not in wanted:
                    ignored[t.suite] = ignored.get(t.suite, 0) + 1
                    continue
                # Some selftests print one name twice (pidfd_test): the
                # second is compared with the other run's second, as `NAME #2`.
                key = (t.host, t.suite, t.name)
                seen[key] = seen.get(key, 0) + 1
                name = t.name if seen[key] == 1 else f'{t.name} #{seen[key]}'
                keyed.setdefault((t.host, t.suite, name), [None, None])[i] = t
    pairs = [Pair(h, s, n, k, v) for (h, s, n), (k, v) in keyed.items()]
    return Comparison(pairs, ignored)
