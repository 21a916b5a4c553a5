"""Run directories of their own: claim, prune, clean (no UML needed)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from kevent_lab import instances

LAB_DIR = Path(__file__).resolve().parent.parent


def test_claims_are_distinct_and_locked(tmp_path):
    a = instances.claim(tmp_path, 'pair')
    b = instances.claim(tmp_path, 'pair')
    try:
        assert (a.id, b.id) == ('1', '2')
        assert a.path == tmp_path.resolve() / 'pair' / '1'
        assert instances.owned(a.path) and instances.owned(b.path)
    finally:
        a.release()
        b.release()
    assert not instances.owned(a.path)
    # A finished run's directory stays for a look until the next claim.
    (a.path / 'server').mkdir()
    c = instances.claim(tmp_path, 'pair')
    try:
        assert c.id == '1' and not (c.path / 'server').exists()
        assert not b.path.exists()
    finally:
        c.release()


def test_prune_removes_older_layouts_but_not_instances_in_use(tmp_path):
    base = tmp_path / 'pair'
    (base / 'server').mkdir(parents=True)          # build/lab/NAME/HOST of before
    (base / 'state.json').write_text('{}')
    a = instances.claim(tmp_path, 'pair')
    try:
        assert sorted(p.name for p in base.iterdir()) == ['.lock', '1']
        b = instances.claim(tmp_path, 'pair')
        b.release()
        assert a.path.exists() and b.id == '2'
    finally:
        a.release()


def test_started_lab_with_live_hosts_stays_in_use(tmp_path):
    # Its supervisor is gone (the lock is free), but a process of a group it
    # names still runs: crash must still find it, prune must keep it.
    inst = instances.claim(tmp_path, 'pair')
    inst.release()
    sleeper = subprocess.Popen(['sleep', '30'], start_new_session=True)
    try:
        (inst.path / 'state.json').write_text(json.dumps(
            {'lab': 'pair', 'id': inst.id, 'pid': 999999999, 'switches': [],
             'hosts': {'x': {'pid': sleeper.pid, 'console': '/dev/null'}}}))
        assert instances.in_use(inst.path)
        assert [i.id for i in instances.started(tmp_path, 'pair')] == ['1']
        assert instances.claim(tmp_path, 'pair').id == '2'
    finally:
        sleeper.kill()
        sleeper.wait()
    assert not instances.in_use(inst.path)
    assert instances.started(tmp_path, 'pair') == []


def test_lock_follows_the_owner_process(tmp_path):
    # Another process claims; its lock lasts exactly as long as it does.
    code = ('import sys, time; sys.path.insert(0, sys.argv[1]); from pathlib import Path; '
            'from kevent_lab import instances; i = instances.claim(Path(sys.argv[2]), "pair"); '
            'print(i.id, flush=True); time.sleep(30)')
    proc = subprocess.Popen([sys.executable, '-c', code, str(LAB_DIR), str(tmp_path)],
                            stdout=subprocess.PIPE, text=True)
    try:
        ident = proc.stdout.readline().strip()
        assert ident == '1'
        mine = instances.claim(tmp_path, 'pair')
        assert mine.id == '2'
        mine.release()
        assert instances.owned(tmp_path / 'pair' / '1')
    finally:
        proc.kill()
        proc.wait()
    assert not instances.owned(tmp_path / 'pair' / '1')


def test_clean_keeps_what_is_in_use(tmp_path):
    busy = instances.claim(tmp_path, 'pair')
    instances.claim(tmp_path, 'pair').release()
    instances.claim(tmp_path, 'star').release()
    said = []
    try:
        instances.clean(tmp_path, said.append)
        assert busy.path.exists()
        assert sorted(p.name for p in (tmp_path / 'pair').iterdir()) == ['.lock', '1']
        assert not (tmp_path / 'star').exists()
        assert any('kept' in s and 'a labctl run is using it' in s for s in said)
    finally:
        busy.release()
    instances.clean(tmp_path, said.append)
    assert not tmp_path.exists()
