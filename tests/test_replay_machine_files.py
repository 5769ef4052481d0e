"""Machine files never ignore what changes the answer: every record of a Dimemas .cfg and every
line of the files it names is read as Dimemas 5.5.0 reads it or refused naming the file and line
(modules, explicit and interleaved mappings, the communications file's bus policy and collective
fans, the 14-field node record); hand-derived makespans on small traces, and real MPI runs."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tareador.cli.mapping import with_ranks_per_node
from tareador.errors import MachineError
from tareador.formats.dimemas import read_dim, write_dim
from tareador.formats.paraver import pcf_value_labels
from tareador.simulation.dimemas_config import parse_cfg
from tareador.simulation.dimemas_engine import replay
from tareador.simulation.machine import MB, Machine, parse_toml
from tareador.simulation.machine_files import BUNDLED, load_machine
from tareador.tracing.mpi_launch import MPIS
from tests.helpers import call, dim, make_run

CLUSTER = BUNDLED / "cluster.toml"
ONE_BYTE_PER_NS = 1e9 / MB  # MB/s, exact in binary
PTP = 50000001  # Extrae's point-to-point MPI event type: MPI_Isend 3, MPI_Irecv 4, MPI_Wait 5, MPI_Waitall 6


def cfg_text(nodes: int = 2, cpus: int = 1, *, bandwidth: float = 100.0, buses: int = 0, latency: float = 0.0,
             intra=(0.0, 0.0), mapping: str = '"predefined mapping information" {"1 TASKS_PER_NODE"};;',
             files: str = '"", "", "", ""', more: str = "") -> str:
    """A Dimemas configuration: unlimited links; ``more`` goes after the mapping record."""
    return ("#DIMEMAS_CONFIGURATION\n"
            '"wide area network information" {"", 1, 0, 4, 0.0, 0.0, 1};;\n'
            f'"environment information" {{"", 0, "", {nodes}, {bandwidth!r}, {buses}, 1}};;\n'
            f'"multi node information" {{0, {nodes}, "", {cpus}, 1.0, {intra[0]!r}, {intra[1]!r}, 0, 0, 0, '
            f'{latency!r}, 0, 0, 0.0}};;\n'
            f"{mapping}\n{more}"
            f'"configuration files" {{{files}}};;\n'
            '"file system parameters" {0.0, 0.0, 8.0, 0, 1.0};;\n')


def write_cfg(tmp_path: Path, text: str, name: str = "m.cfg") -> Path:
    (tmp_path / name).write_text(text)
    return tmp_path / name


def tareador(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "tareador", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


# ---- records Dimemas does not know, or would skip without a word ----

def test_a_misspelled_record_is_refused_naming_file_and_line(tmp_path):
    """'configuration file' for 'configuration files': Dimemas stops ('Unknown configuration
    record type at line 6'); replay used to go on without the scheduler file it names."""
    text = cfg_text().replace('"configuration files"', '"configuration file"')
    with pytest.raises(MachineError, match=r"m.cfg:6: unknown record 'configuration file' \(did you mean "
                                           r"'configuration files'\?\)"):
        parse_cfg(text, tmp_path / "m.cfg")
    r = tareador("replay", "nothing.dim", "--machine", write_cfg(tmp_path, text))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "m.cfg:6: unknown record" in r.stderr


@pytest.mark.parametrize("change,error", [
    # Dimemas skips a line holding "//", and from a line holding "/*" to the next holding "*/".
    (lambda t: t.replace('"", "", "", ""};;', '"", "", "", ""};; // none'), r"m.cfg:6: Dimemas skips every line "
                                                                             "that holds '//'"),
    (lambda t: t + "/* one line */\n", r"m.cfg:8: .*ends only at a later line holding '\*/'"),
    (lambda t: t + '"environment information" {"", 0, "", 2, 100.0, 0, 1};;\n', "a second 'environment "
                                                                                 "information'"),
    (lambda t: t.replace("{0, 2, ", "{0, 1, "), "its node records define 1 nodes, \"environment information\" says 2"),
    (lambda t: t.replace('"", "", "", ""', '"", "", "", "random.cfg"'), "the sensitivity file random.cfg"),
    (lambda t: t + '"dedicated connection information" {0, 0, 1, 10.0, [1] {1}, 0, "<", "&", 0, "<", [1] {1}, '
                   '0.0, 0.0};;\n', "'dedicated connection information' is not modelled"),
    (lambda t: t.replace('"multi node information" {0, 2, "", 1, 1.0, 0.0, 0.0, 0, 0, 0, 0.0, 0, 0, 0.0}',
                         '"node information" {0, 0, "", 1, 1, 1, 0.0, 0.0, 1.0, 0.0, 0.0};;\n'
                         '"node information" {0, 1, "", 1, 1, 1, 0.0, 0.0, 1.0, 0.0, 0.0}'),
     "the old 11-field 'node information'"),
    (lambda t: t.replace('"1 TASKS_PER_NODE"', '"0 TASKS_PER_NODE"'), r"m.cfg:5: 0 TASKS_PER_NODE maps no task"),
    (lambda t: t.replace('"predefined mapping information" {"1 TASKS_PER_NODE"};;',
                         '"modules information" {7003, 2, 2.0};;\n"predefined mapping information" '
                         '{"1 TASKS_PER_NODE"};;'), "m.cfg:5: a module before the mapping record"),
    (lambda t: t + '"mapping information" {"t.dim", 2, [2] {0,1}};;\n', "a second mapping .* maps a second "
                                                                       "application"),
])
@pytest.mark.fast
def test_what_changes_the_answer_and_replay_cannot_honour_is_refused(tmp_path, change, error):
    with pytest.raises(MachineError, match=error):
        parse_cfg(change(cfg_text()), tmp_path / "m.cfg")


@pytest.mark.fast
def test_node_records_with_node_ids(tmp_path):
    """The 14-field "node information" (a node id after the machine id, which Dimemas ignores)
    and the 13-field one define a node each; the same machine as one "multi node information"."""
    node = '"node information" {{0, {}"", 2, 1.0, 1e-06, 1000.0, 0, 0, 0, 1e-05, 1, 1, 0.0}};;\n'
    multi = cfg_text(nodes=3, cpus=2, intra=(1e-6, 1000.0), latency=1e-5).replace(", 0, 0, 0.0};;", ", 1, 1, 0.0};;")
    nodes = multi.replace(multi.splitlines()[3] + "\n", node.format("7, ") + node.format("") + node.format("2, "))
    assert "node information\" {0, 7, \"\"" in nodes
    assert parse_cfg(nodes, tmp_path / "m.cfg") == parse_cfg(multi, tmp_path / "m.cfg")
    assert parse_cfg(nodes, tmp_path / "m.cfg").nodes == 3


# ---- modules: a task type's speed factor ----

@pytest.mark.fast
def test_modules_speed_up_the_bursts_of_an_event_value(tmp_path):
    """Bursts of 1 s at relative speed 2 (0.5 s each): outside any module; in task type 2 with
    factor 4 (0.25 s, then halved: 0.125); outside; in type 3 with factor 0 (no time); in type 4
    with factor -0.25 (0.25 s whatever its length, halved: 0.125): 0.5 + 0.125 + 0.5 + 0 + 0.125
    = 1.25 s, 2.5 s without the modules."""
    blocks = ["1:0:0:1.0\n20:0:0:7003:2\n1:0:0:1.0\n20:0:0:7003:0\n1:0:0:1.0\n20:0:0:7003:3\n1:0:0:1.0\n"
              "20:0:0:7003:0\n20:0:0:7003:4\n1:0:0:1.0\n20:0:0:7003:0\n"]
    trace = dim(tmp_path, [1], blocks)
    modules = ('"modules information" {7003, 2, 4.0};;\n"modules information" {7003, 3, 0.0};;\n'
               '"modules information" {7003, 4, -0.25};;\n')
    machine = parse_cfg(cfg_text(nodes=1, more=modules).replace(", 1.0, 0.0, 0.0, 0", ", 2.0, 0.0, 0.0, 0"),
                        tmp_path / "m.cfg")
    assert machine.modules == ((7003, 2, 4.0), (7003, 3, 0.0), (7003, 4, -0.25)) and machine.relative_speed == 2.0
    assert replay(trace, machine).makespan == 1.25
    assert replay(trace, Machine(relative_speed=2.0)).makespan == 2.5


@pytest.mark.fast
def test_modules_follow_dimemas_list_of_open_modules(tmp_path):
    """Dimemas keeps a thread's open modules in a list it adds to at the front and closes from the
    back: 7003:2 then 7003:3 open both, the front (3, factor 4) times the first burst (0.25 s);
    an event (50000001, 0) closes the back one only if of its type, so it moves module 2 to the
    front (factor 2: 0.5 s); 7003:0 then closes the back one, module 3, and 2 stays (0.5 s); the
    next 7003:0 closes 2 (1 s). 2.25 s."""
    blocks = ["1:0:0:0.0\n20:0:0:7003:2\n20:0:0:7003:3\n1:0:0:1.0\n20:0:0:50000001:0\n1:0:0:1.0\n"
              "20:0:0:7003:0\n1:0:0:1.0\n20:0:0:7003:0\n1:0:0:1.0\n"]
    modules = '"modules information" {7003, 2, 2.0};;\n"modules information" {7003, 3, 4.0};;\n'
    assert replay(dim(tmp_path, [1], blocks), parse_cfg(cfg_text(nodes=1, more=modules), tmp_path / "m.cfg")
                  ).makespan == 2.25


def test_a_machine_with_modules_is_refused_where_nothing_replays_a_trace(tmp_path):
    """simulate of one trace schedules its task graph without events; whatif answers that question."""
    make_run(tmp_path / "run", [[call("MPI_Send", 1, 0, 8, 10)], [call("MPI_Recv", 0, 0, 8, 10)]])
    cfg = write_cfg(tmp_path, cfg_text(nodes=1, more='"modules information" {7003, 1, 2.0};;\n'))
    r = tareador("simulate", tmp_path / "run" / "rank-0", "--machine", cfg)
    assert r.returncode == 2 and "its modules (task types made faster) are for replaying Dimemas traces" in r.stderr


# ---- mappings ----

@pytest.mark.fast
def test_explicit_and_interleaved_mappings(tmp_path):
    """Rank 0 sends 1 MiB to rank 1, which posted its receive at 0; both pay the latency. On one
    node: 1 us + 1 MiB at 1000 MB/s = 0.001001 s; on two: 10 us + 1 MiB at 100 MB/s = 0.01001 s."""
    trace = dim(tmp_path, [1, 1], ["1:0:0:0.0\n2:0:0:1:1048576:1:0:0\n", "1:1:0:0.0\n3:1:0:0:1048576:1:0:0\n"])
    text = cfg_text(nodes=2, cpus=2, latency=1e-5, intra=(1e-6, 1000.0))

    def on(mapping: str) -> Machine:
        return parse_cfg(text.replace('"predefined mapping information" {"1 TASKS_PER_NODE"};;', mapping),
                         tmp_path / "m.cfg")

    together, apart = on('"mapping information" {"t.dim", 2, [2] {0, 0}};;'), on(
        '"mapping information" {"t.dim", 2, [2] {1, 0}};;')
    assert (together.mapping, apart.mapping) == ((0, 0), (1, 0))
    assert replay(trace, together).makespan == 0.001001
    assert replay(trace, apart).makespan == 0.01001
    assert replay(trace, on('"predefined mapping information" {"INTERLEAVED"};;')).makespan == 0.01001
    assert on('"predefined mapping information" {"INTERLEAVED"};;').node_of_tasks(5) == [0, 1, 0, 1, 0]
    # --ranks-per-node overrides the file's mapping, as Dimemas' command line its first mapping
    assert replay(trace, with_ranks_per_node(together, "1")).makespan == 0.01001
    # a longer mapping is used in part, as Dimemas does; a shorter one, or a node outside, is refused
    assert on('"mapping information" {"t.dim", 3, [3] {0, 0, 1}};;').node_of_tasks(2) == [0, 0]
    with pytest.raises(MachineError, match="the machine's mapping places 1 ranks but the trace has 2"):
        replay(trace, on('"mapping information" {"t.dim", 1, [1] {0}};;'))
    with pytest.raises(MachineError, match="puts rank 1 on node 2, but the machine's nodes are 0..1"):
        on('"mapping information" {"t.dim", 2, [2] {0, 2}};;')
    with pytest.raises(MachineError, match="as \\[n\\] \\{node, ...\\} with n nodes"):
        on('"mapping information" {"t.dim", 2, [3] {0, 1}};;')
    assert parse_toml("[cpu]\nnodes = 2\nmapping = [1, 1]\n").node_of_tasks(2) == [1, 1]
    with pytest.raises(MachineError, match="mapping must list the node"):
        parse_toml('[cpu]\nmapping = ["a"]\n')


# ---- the communications file ----

# Ranks 0, 1 and 3 each send 1 MiB (immediate) to rank 2, which receives them in that order; they
# reach their sends at 0, 5 ms and C ms. A node each, 100 MB/s (1 MiB in 10 ms), one bus.
def bus_trace(tmp_path, c_ms: int):
    sender = "1:{r}:0:{s}\n2:{r}:0:2:1048576:{r}:0:2\n"
    return dim(tmp_path, [1] * 4, [sender.format(r=0, s="0.0"), sender.format(r=1, s="0.005"),
                                   "1:2:0:0.0\n" + "".join(f"3:2:0:{r}:1048576:{r}:0:0\n" for r in (0, 1, 3)),
                                   sender.format(r=3, s=f"0.0{c_ms}")])


@pytest.mark.parametrize("policy,c_ms,expected", [
    # FIFO: 0-10, then the bus is free for rank 1's at 10-20 and rank 3's at 20-30.
    ("FIFO", 12, 0.030), ("FIFO", 16, 0.030), (None, 12, 0.030),
    # RR (BOOST alike): no message waits; one that starts with 2 messages on 1 bus moves at half
    # the bandwidth, holding the bus only 10 ms: rank 1's 5-25 (bus until 15); rank 3's at 12 ms
    # shares it too (12-32), at 16 ms it has it alone (16-26, the makespan 25 < 26).
    ("RR", 12, 0.032), ("RR", 16, 0.026), ("BOOST", 12, 0.032),
])
@pytest.mark.fast
def test_communication_policy_shares_the_buses(tmp_path, policy, c_ms, expected):
    comm = tmp_path / "comm.txt"
    comm.write_text(f"Machine policy: 0 {policy}\n" + ("Quantum size (bytes): 100\n" if policy in ("RR", "BOOST")
                                                      else ""))
    files = '"", "", "comm.txt", ""' if policy else '"", "", "", ""'
    machine = load_machine(write_cfg(tmp_path, cfg_text(nodes=4, buses=1, files=files)))
    assert machine.bus_policy == ("rr" if policy in ("RR", "BOOST") else "fifo")
    assert replay(bus_trace(tmp_path, c_ms), machine).makespan == pytest.approx(expected, abs=1e-12)
    assert bool(machine.warnings) == (policy in ("RR", "BOOST"))  # the quantum, which Dimemas never uses
    assert parse_toml(f'[cpu]\nnodes = 4\n[network]\ninter_bandwidth = 100.0\nbuses = 1\nbus_policy = '
                      f'"{machine.bus_policy}"\n') == Machine(nodes=4, inter_bandwidth=100.0, buses=1,
                                                              bus_policy=machine.bus_policy)


@pytest.mark.parametrize("line,expected_ns", [
    ("", 20032),  # the default: constant fans of the root's bytes sent (8) and received (24)
    ("Machine globalop: 0 11 CTE MEAN CTE S+R", 20048),  # (8 + 24) / 2 in, 8 + 24 out
    ("Machine globalop: 0 11 LIN MAX 0 MIN", 10024),  # 2 nodes - 1 times 24 in, nothing out
    ("11 LOG 2MAX CTE MIN 1.0", 20056),  # log2 of 2 nodes = 1 stage of 48 in, 8 out
    ("Machine globalop: 0 10 LIN MAX LIN MAX", 20032),  # MPI_Reduce's line, which Dimemas skips
])
@pytest.mark.fast
def test_communications_file_sets_an_operations_fans(tmp_path, line, expected_ns):
    """An MPI_Allreduce (Dimemas id 11) of 2 ranks on 2 nodes, the root's record sending 8 bytes
    and receiving 24, both arriving at 0: it takes fan-in + fan-out between nodes, each 10 us +
    its bytes at one byte per ns times the model's factor (within a node: no cost)."""
    (tmp_path / "comm.txt").write_text(line + "\n")
    machine = load_machine(write_cfg(tmp_path, cfg_text(bandwidth=ONE_BYTE_PER_NS, latency=1e-5,
                                                        files='"", "", "comm.txt", ""')))
    trace = read_dim(write_dim(tmp_path / "g.dim", "g", [1, 1], [f"1:{r}:0:0.0\n10:{r}:0:11:1:0:0:8:24:1\n"
                                                                 for r in range(2)], {1: (0, 1)}))
    assert round(replay(trace, machine).makespan * 1e9) == expected_ns
    assert bool(machine.warnings) == line.startswith("Machine globalop: 0 10 ")


@pytest.mark.parametrize("text,error", [
    ("Policy: RR\n", "write 'Machine policy: 0 NAME'"),
    ("Machine policy: 0 RR\n", "needs a 'Quantum size"),
    ("Machine policy: 0 RR\nMachine policy: 0 FIFO\n", "comm.txt:2: expected 'Quantum size"),
    ("Machine policy: 1 FIFO\n", "machine 1: replay simulates one machine"),
    ("Machine globalop: 0 11 CTE HALF CTE MAX\n", "'HALF' is not a fan size"),
    ("11 CTE MAX CTE MAX\n", "not a line of a Dimemas communications file"),
])
@pytest.mark.fast
def test_a_communications_file_dimemas_would_misread_is_refused(tmp_path, text, error):
    (tmp_path / "comm.txt").write_text(text)
    with pytest.raises(MachineError, match=error):
        load_machine(write_cfg(tmp_path, cfg_text(files='"", "", "comm.txt", ""')))


def test_a_busy_wait_is_a_warning(tmp_path):
    """Replay blocks a receiver at once; Dimemas spins first (and loses a message meanwhile)."""
    (tmp_path / "sched.txt").write_text("Policy: FIFO\nContext switch cost (seconds): 0.0\n"
                                        "Busy wait (seconds):  0.001\n")
    cfg = write_cfg(tmp_path, cfg_text(files='sched.txt, "", "", ""'))
    write_dim(tmp_path / "t.dim", "t", [1], ["1:0:0:1.0\n"])
    r = tareador("replay", tmp_path / "t.dim", "--machine", cfg)
    assert r.returncode == 0 and r.stdout.startswith("makespan 1.000000000 s")
    assert r.stderr == (f"tareador: warning: {tmp_path / 'sched.txt'}:3: a busy wait of 0.001 s is not modelled: a "
                        "receiver blocks at once (Dimemas 5.5.0 spins first, and loses a message that arrives "
                        "meanwhile)\n")


# ---- what replay's Paraver trace shares with Dimemas' ----

@pytest.mark.fast
def test_a_send_is_recorded_on_the_cpu_where_it_paid_its_latency(tmp_path):
    """One node of 2 CPUs under SS_MPI_CP, every send and receive paying 1 us on its CPU, transfers
    instantaneous. Ranks 1 and 0 set a priority (event 6999), ranks 2 and 3 never do, so they go
    before them. At 0 ranks 3 and 2 take CPUs 1 and 2 (all are equal then: last queued first)
    and pay their receive latencies until 1 us, then block; ranks 1 and 0 run from 1 us: rank 1
    on CPU 1 for 2 us, sends to rank 3 at 3 us (latency 3-4 us), then runs 12 us (4-16 us); rank 3,
    woken at 4 us, waits for a CPU. Rank 0 runs 1-11 us on CPU 2 and reaches its send there, but
    rank 3 takes that CPU (11-21 us: the makespan) and rank 0 waits until rank 1 leaves CPU 1 at
    16 us: it pays its latency there (16-17 us), so its message leaves CPU 1 at 17 us, as
    Dimemas writes it; then rank 0 runs 17-18 us and rank 2 (woken at 17 us) 18-19 us on CPU 1."""
    blocks = ["1:0:0:0.0\n20:0:0:9:1\n20:0:0:6999:5\n1:0:0:0.000010000\n2:0:0:2:0:1:0:2\n1:0:0:0.000001000\n",
              "1:1:0:0.0\n20:1:0:9:1\n20:1:0:6999:5\n1:1:0:0.000002000\n2:1:0:3:0:1:0:2\n1:1:0:0.000012000\n",
              "1:2:0:0.0\n20:2:0:9:1\n3:2:0:0:0:1:0:0\n1:2:0:0.000001000\n",
              "1:3:0:0.0\n20:3:0:9:1\n3:3:0:1:0:1:0:0\n1:3:0:0.000010000\n"]
    run = replay(dim(tmp_path, [1] * 4, blocks), Machine(cores_per_node=2, tasks_per_node=4, intra_latency=1e-6,
                                                         policy="cp"), record=True).paraver
    assert run.end_time == 21000
    comms = sorted(zip(*(run.comms[k].tolist() for k in ("thread", "cpu", "lsend", "psend", "rthread", "rcpu",
                                                          "lrecv", "precv")), strict=True))
    assert comms == [(0, 1, 11000, 17000, 2, 2, 0, 17000), (1, 1, 3000, 4000, 3, 1, 0, 4000)]
    states = sorted(zip(*(run.states[k].tolist() for k in ("thread", "cpu", "begin", "end", "state")), strict=True))
    assert states == [(0, 0, 0, 1000, 5), (0, 0, 11000, 16000, 5), (0, 1, 16000, 17000, 26), (0, 1, 17000, 18000, 1),
                      (0, 2, 1000, 11000, 1),
                      (1, 0, 0, 1000, 5), (1, 1, 1000, 3000, 1), (1, 1, 3000, 4000, 26), (1, 1, 4000, 16000, 1),
                      (2, 0, 1000, 17000, 3), (2, 0, 17000, 18000, 5), (2, 1, 18000, 19000, 1), (2, 2, 0, 1000, 26),
                      (3, 0, 1000, 4000, 3), (3, 0, 4000, 11000, 5), (3, 1, 0, 1000, 26), (3, 2, 11000, 21000, 1)]


@pytest.mark.fast
def test_a_context_switch_before_a_latency(tmp_path):
    """Two ranks on two nodes, a 500 ns context switch each time a thread gets a CPU, latency
    1 us. Rank 0 gets its CPU for its empty first burst (switch 0-500) and again for its 1 us
    burst (switch 500-1000, runs 1000-2000), then reaches its send and gets its CPU again to pay
    the latency: switch 2000-2500, latency 2500-3500. Replay labels these Context switch (6) then
    Startup latency (26); Dimemas 5.5.0 writes the same intervals on the same CPU as Startup
    latency then Running (docs/reference/validation.md, Timelines)."""
    blocks = ["1:0:0:0.0\n20:0:0:9:1\n1:0:0:0.000001000\n2:0:0:1:0:1:0:2\n",
              "1:1:0:0.0\n20:1:0:9:1\n3:1:0:0:0:1:0:0\n"]
    run = replay(dim(tmp_path, [1, 1], blocks), Machine(nodes=2, inter_latency=1e-6, context_switch=5e-7),
                 record=True).paraver
    states = sorted(zip(*(run.states[k].tolist() for k in ("thread", "begin", "end", "state")), strict=True))
    assert [s for s in states if s[0] == 0] == [(0, 0, 500, 6), (0, 500, 1000, 6), (0, 1000, 2000, 1),
                                                (0, 2000, 2500, 6), (0, 2500, 3500, 26)]


# ---- real MPI runs ----

@pytest.fixture(scope="module")
def traced(mpi_examples, tmp_path_factory):
    """traced(example) -> the run directory of `tareador mpirun -np 4` of a bundled MPI example (MPICH)."""
    runs = {}

    def run(example: str) -> Path:
        if example not in runs:
            out = tmp_path_factory.mktemp(example) / "run"
            r = tareador("mpirun", "-np", "4", "-o", out, "--", mpi_examples(MPIS["mpich"]) / example)
            assert r.returncode == 0, r.stderr
            runs[example] = out
        return runs[example]

    return run


def scaled_type(dim_text: str, value: int, factor: float) -> str:
    """The trace with every CPU burst of task type ``value`` (between 7003:value and 7003:0)
    divided by ``factor``, as a module would: the derivation, by rewriting the trace (with a
    factor of 2 the seconds halved are exactly the nanoseconds halved)."""
    out, inside = [], {}
    for line in dim_text.splitlines(keepends=True):
        fields = line.rstrip("\n").split(":")
        if fields[0] == "20" and fields[3] == "7003":
            inside[fields[1]] = fields[4] == str(value)
        elif fields[0] == "1" and inside.get(fields[1]):
            line = f"1:{fields[1]}:{fields[2]}:{float(fields[3]) / factor!r}\n"
        out.append(line)
    return "".join(out)


def test_a_module_speeds_up_a_task_type_of_a_real_run(traced, tmp_path):
    """The 4-rank Jacobi on 4 nodes (10 us, 100 MB/s between them) with jacobi_block twice as
    fast: the same makespan as its trace with every jacobi_block burst halved, and faster than
    without the module (872371 ns against Dimemas' 517123 on MPICH, when the issue was filed)."""
    run = traced("jacobi")
    value = {name: v for v, name in pcf_value_labels(run / "authentic.pcf", 7003).items()}["jacobi_block"]
    base = cfg_text(nodes=4, latency=1e-5, intra=(1e-6, 1000.0))
    module = load_machine(write_cfg(tmp_path, cfg_text(nodes=4, latency=1e-5, intra=(1e-6, 1000.0),
                                                       more=f'"modules information" {{7003, {value}, 2.0}};;\n')))
    plain = load_machine(write_cfg(tmp_path, base, "plain.cfg"))
    authentic = read_dim(run / "authentic.dim")
    halved = write_dim(tmp_path / "halved.dim", "halved", [1] * 4,
                       _thread_blocks(scaled_type((run / "authentic.dim").read_text(), value, 2.0)))
    faster = replay(authentic, module).makespan
    assert faster == replay(read_dim(halved), plain).makespan
    assert faster < replay(authentic, plain).makespan


def test_a_communication_policy_on_a_real_ring(traced, tmp_path):
    """The ring (4 ranks, 12 messages of 8192 bytes) on 4 nodes, 10 us, 100 MB/s (8192 B in
    78125 ns), one bus, unlimited links. FIFO: a message that finds the bus taken waits, then
    moves at full bandwidth. RR: no message waits for the bus (its physical send is its logical
    send plus the latency), and one that starts with k messages on the one bus moves k times
    slower; the ranks send together, so some do."""
    run = traced("ring")
    full = 8192 * 1e9 / (100 * MB)
    timings = {}
    for policy in ("FIFO", "RR"):
        (tmp_path / "comm.txt").write_text(f"Machine policy: 0 {policy}\n" + ("Quantum size (bytes): 8\n"
                                                                             if policy == "RR" else ""))
        cfg = write_cfg(tmp_path, cfg_text(nodes=4, latency=1e-5, buses=1, files='"", "", "comm.txt", ""'))
        r = tareador("replay", run / "authentic.dim", "--machine", cfg, "--prv", tmp_path / f"{policy}.prv")
        assert r.returncode == 0, r.stderr
        comms = [[int(x) for x in line.split(":")[1:]] for line in (tmp_path / f"{policy}.prv").read_text()
                 .splitlines()[1:] if line.startswith("3:")]
        assert len(comms) == 12
        timings[policy] = [(c[5] - c[4], (c[11] - c[5]) / full) for c in comms]  # bus wait + latency, slowdown
    assert all(wait >= 10000 for wait, _ in timings["FIFO"]) and any(wait > 10000 for wait, _ in timings["FIFO"])
    assert all(abs(k - 1) < 1e-4 for _, k in timings["FIFO"])
    assert all(wait == 10000 for wait, _ in timings["RR"])
    assert all(abs(k - round(k)) < 1e-4 and 1 <= round(k) <= 4 for _, k in timings["RR"])
    assert any(round(k) > 1 for _, k in timings["RR"])


def test_simulate_says_when_it_gives_nodes_more_cpus_than_the_machine(traced, tmp_path):
    """simulate gives every rank its own cores: 2 ranks per node on a machine of 1 CPU per node
    makes each node 2 CPUs for the authentic run; it says so."""
    cfg = write_cfg(tmp_path, cfg_text(nodes=4, latency=1e-5))
    r = tareador("simulate", traced("jacobi"), "--machine", cfg, "--ranks-per-node", "2", "--cores", "1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ranks             4, 2 per node")
    assert (f"tareador: warning: {cfg} has 1 CPU per node, and 2 ranks on each: simulate gives every rank its own "
            "cores, so each node gets 2 CPUs for the authentic run and c x 2 for c cores per rank") in r.stderr
    r = tareador("simulate", traced("jacobi"), "--machine", cfg, "--cores", "1")
    assert r.returncode == 0 and "warning" not in r.stderr


def test_overlapped_traces_show_what_ran(traced, tmp_path):
    """overlap-real.dim and overlap-ideal.dim of the real Jacobi frame each rank's fragments with
    their task type (as authentic.dim: the same fragments), each chunk's send with MPI_Isend, its
    receives with MPI_Irecv and its wait with MPI_Wait, and name them in their .pcf; the events
    take no time (a rank per node: replayed without them, the same makespan)."""
    run = traced("jacobi")
    r = tareador("overlap", run, "--machine", CLUSTER, "--bandwidth", "100")
    assert r.returncode == 0, r.stderr
    machine = load_machine(CLUSTER)

    def task_types(text: str) -> Counter:
        return Counter(tuple(line.split(":")[1::3]) for line in text.splitlines() if line.startswith("20:")
                       and ":7003:" in line)

    authentic = (run / "authentic.dim").read_text()
    for kind in ("real", "ideal"):
        path = run / f"overlap-{kind}.dim"
        text = path.read_text()
        assert task_types(text) == task_types(authentic)
        assert pcf_value_labels(path.with_suffix(".pcf"), 7003) == pcf_value_labels(run / "authentic.pcf", 7003)
        assert pcf_value_labels(path.with_suffix(".pcf"), PTP)[3] == "MPI_Isend"
        frame, framed = {}, Counter()
        for line in text.splitlines():
            f = line.split(":")
            if f[0] == "20" and f[3] == str(PTP):
                frame[f[1]] = int(f[4])
            elif f[0] in ("2", "3"):
                framed[f[0], f[-1] if f[0] == "3" else "send", frame.get(f[1], 0)] += 1
        # sends in MPI_Isend (3); receives posted (type 1) in MPI_Irecv (4), waited for (type 2) in MPI_Wait (5)
        assert set(framed) == {("2", "send", 3), ("3", "1", 4), ("3", "2", 5)}, framed
        bare = write_dim(tmp_path / f"{kind}-bare.dim", "bare", [1] * 4, _thread_blocks(
            "".join(line for line in text.splitlines(keepends=True) if not line.startswith("20:"))))
        assert replay(read_dim(path), machine).makespan == replay(read_dim(bare), machine).makespan


def _thread_blocks(text: str) -> list[str]:
    """The records of each task of a one-thread-per-task .dim, to write it again with its offsets."""
    blocks: dict[str, list[str]] = {}
    for line in text.splitlines(keepends=True)[1:]:
        if line[0].isdigit():
            blocks.setdefault(line.split(":")[1], []).append(line)
    return ["".join(blocks[k]) for k in sorted(blocks, key=int)]
