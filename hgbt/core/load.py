"""How many threads a fit's next round should use on a shared machine.

OpenMP threads wait for each other at the end of every parallel region, and
libgomp's threads spin while they wait. When other processes keep the CPUs
busy, a thread of the fit is often descheduled while its partners spin, and
a 2-thread fit can take 5-100 times as long as a 1-thread one (measured in
``benchmarks/RESULTS.md``, LightGBM and XGBoost alike). The wait policy
cannot be changed once libgomp runs, and a passive policy makes every idle
fit slower. So a fit that was not given ``n_threads`` watches the CPU time
other processes take on the CPUs it may use (``/proc/stat`` less its own
CPU time) and runs its rounds on the CPUs they leave free, at least one.
The model does not depend on the thread count, so this changes only the time.
"""
import os
import time

#: seconds between two readings of the CPU counters (at 100 ticks a second,
#: about 10 ticks per CPU: enough to tell a busy CPU from an idle one)
INTERVAL = 0.1
_STAT = "/proc/stat"
_LOADAVG = "/proc/loadavg"


def _busy_seconds(cpus, path=_STAT):
    """CPU seconds the ``cpus`` spent busy since boot (every process), or None
    where ``/proc/stat`` cannot be read."""
    try:
        with open(path) as f:
            lines = f.readlines()
    except OSError:
        return None
    busy = 0
    for line in lines:
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        try:
            if int(name[3:]) in cpus:
                # user nice system idle iowait irq softirq steal ...
                ticks = [int(v) for v in rest.split()[:8]]
                busy += ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]
        except (ValueError, IndexError):  # a line this reader does not know
            return None
    return busy / os.sysconf("SC_CLK_TCK")


def _running_here():
    """Threads of this process running or runnable now (this one included;
    OpenMP's workers spin for a while after each parallel region)."""
    count = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/stat") as f:
                # the state follows the parenthesised command name
                count += f.read().rpartition(")")[2].split()[0] == "R"
        except (OSError, IndexError):
            pass
    return max(1, count)


def _running_elsewhere(path=_LOADAVG):
    """Tasks of other processes running or runnable now (the fourth field of
    ``/proc/loadavg`` less this process's), or None where it cannot be read."""
    try:
        with open(path) as f:
            running = int(f.read().split()[3].split("/")[0])
        return max(0, running - _running_here())
    except (OSError, IndexError, ValueError):
        return None


class ThreadGovernor:
    """The thread count of each round of a fit with ``n_threads=None``.

    Parameters
    ----------
    n_threads : int
        The most threads (``effective_n_threads(None)``).
    cpus : set of int or None
        The CPUs the process may use (None: its affinity mask).
    """

    def __init__(self, n_threads, cpus=None):
        self.n_threads = self.current = n_threads
        try:
            self._cpus = set(os.sched_getaffinity(0) if cpus is None else cpus)
        except AttributeError:  # pragma: no cover - not Linux
            self._cpus = set()
        self._last = self._reading() if n_threads > 1 and self._cpus else None
        if self._last is None:
            return
        # Before the first interval: the tasks running now. Only meaningful
        # when the process may use every CPU (loadavg counts all of them).
        others = _running_elsewhere()
        if others is not None and len(self._cpus) == os.cpu_count():
            self.current = self._clip(len(self._cpus) - others)

    def _reading(self):
        busy = _busy_seconds(self._cpus)
        if busy is None:
            return None
        return time.monotonic(), busy, time.process_time()

    def _clip(self, free):
        return max(1, min(self.n_threads, int(free + 0.5)))

    def threads(self):
        """The thread count for the next round: every CPU but those other
        processes kept busy since the last reading (read at most every
        :data:`INTERVAL` seconds), between 1 and ``n_threads``."""
        if self._last is None:
            return self.current
        now = time.monotonic()
        if now - self._last[0] < INTERVAL:
            return self.current
        reading = self._reading()
        if reading is None:
            self._last = None
            return self.current
        wall = reading[0] - self._last[0]
        # busy time of every process on our CPUs, less this process's own
        others = max(0.0, (reading[1] - self._last[1]) - (reading[2] - self._last[2])) / wall
        self._last = reading
        self.current = self._clip(len(self._cpus) - others)
        return self.current


def cgroup_cpus(root="/sys/fs/cgroup"):
    """The CPU time a container's cgroup allows, in CPUs (rounded up), or None
    without a limit: cgroup v2's ``cpu.max`` or v1's CFS quota and period
    (Docker's ``--cpus``, Kubernetes' CPU limits)."""
    def read(name):
        try:
            with open(os.path.join(root, name)) as f:
                return f.read().split()
        except OSError:
            return None
    try:
        fields = read("cpu.max")
        if fields is not None:
            quota, period = fields[0], fields[1]
        else:
            quota = read("cpu/cpu.cfs_quota_us")
            period = read("cpu/cpu.cfs_period_us")
            if quota is None or period is None:
                return None
            quota, period = quota[0], period[0]
        if quota in ("max", "-1"):
            return None
        quota, period = int(quota), int(period)
    except (IndexError, ValueError):
        return None
    if quota <= 0 or period <= 0:
        return None
    return max(1, -(-quota // period))
