#!/usr/bin/env python3
"""Cluster latency and memory: two `tend run` agents joined to one real etcd on loopback.

Host A runs `kv "bench" { value => os.readfile(IN) }`; host B runs
`file OUT { content => world.getval("bench")->value }`. Each trial writes a new value to
IN (atomically, by rename) and times from that write until B's OUT holds the value,
polling every 0.2 ms: A's file watch, A's dataflow, A's kv check-apply and etcd
transaction, B's etcd watch, B's dataflow and B's file write. Between trials it waits
20 ms. It then samples the idle resident memory (VmRSS) of B, and of the same program run
without --seeds (the local world), to show what joining a cluster costs.

Then the same for an exported resource: host C exports `@@file "bench"` whose content is
IN2, host D collects it (`File <<| |>> { path => OUT2 }`); each trial times from the write
of IN2 until D's OUT2 holds it (C's dataflow and graph swap, the export's etcd transaction,
D's watch, D's interpretation of its last output with the new export, D's file write).

Then schedule failover: three agents volunteer for one namespace (`schedule`, rr, max 2,
`--world-ttl 3`); each trial kills (SIGKILL) a chosen host that is not the leader and times
until both survivors' files show the new choice, then restarts the victim. A dead host is
noticed when its session lease runs out, so the figure is the TTL plus what tend adds.

Usage: cluster.py TEND_BINARY [TRIALS] [FAILOVER_TRIALS]
With TEND_BENCH_TLS=1 etcd speaks TLS and requires client certificates (made by `tend pki`),
and every agent and etcdctl connects with them.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def write_atomic(path, text):
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def wait(cond, limit, what, poll=0.0002):
    """Until `cond()` holds, looking every `poll` s; exits after `limit` s."""
    deadline = time.monotonic() + limit
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for " + what)
        time.sleep(poll)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def stop_all(procs, etcd, work):
    """Stops the agents `procs` (SIGTERM, then SIGKILL after 10 s), then etcd, and removes `work`."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
    etcd.kill()
    etcd.wait()
    shutil.rmtree(work, ignore_errors=True)


def pct(sorted_values, p):
    return sorted_values[min(len(sorted_values) - 1, int(round(p / 100.0 * (len(sorted_values) - 1))))]


class Cluster:
    """How to reach the bench's etcd: `flags` for tend (--seeds and, over TLS, the files),
    `ctl` for etcdctl."""

    def __init__(self, url, tls):
        self.url = url
        self.flags = ["--seeds", url]
        self.ctl = ["--endpoints", url]
        if tls:
            files = ["--cacert", tls + "/ca.crt", "--cert", tls + "/bench.crt", "--key", tls + "/bench.key"]
            self.flags += files
            self.ctl += files


def start_etcd(tend, work):
    """A one-member etcd on free loopback ports, data under WORK, once healthy (over mutual
    TLS with certificates from `tend pki` when TEND_BENCH_TLS is set): (process, Cluster)."""
    client, peer, metrics = free_port(), free_port(), free_port()
    tls = os.path.join(work, "pki") if os.environ.get("TEND_BENCH_TLS") else None
    url = "%s://127.0.0.1:%d" % ("https" if tls else "http", client)
    args = ["etcd", "--name", "b1", "--data-dir", os.path.join(work, "etcd"),
            "--listen-client-urls", url, "--advertise-client-urls", url,
            "--listen-metrics-urls", "http://127.0.0.1:%d" % metrics,
            "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-cluster", "b1=http://127.0.0.1:%d" % peer]
    if tls:
        for cmd in (["init", tls], ["issue", tls, "etcd", "--ip", "127.0.0.1"], ["issue", tls, "bench"]):
            subprocess.run([tend, "pki"] + cmd, check=True, stdout=subprocess.DEVNULL)
        args += ["--cert-file", tls + "/etcd.crt", "--key-file", tls + "/etcd.key",
                 "--trusted-ca-file", tls + "/ca.crt", "--client-cert-auth"]
    etcd = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def healthy():
        try:
            return b'"true"' in urllib.request.urlopen("http://127.0.0.1:%d/health" % metrics, timeout=1).read()
        except OSError:
            return False
    try:
        wait(healthy, 20, "etcd")
    except SystemExit:
        etcd.kill()
        raise
    return etcd, Cluster(url, tls)


def setup(name, trials):
    """The binary, the trial count (argv, else `trials`), a work directory and an etcd."""
    tend = sys.argv[1]
    trials = int(sys.argv[2]) if len(sys.argv) > 2 else trials
    work = tempfile.mkdtemp(prefix="tend-%s-bench-" % name)
    etcd, cluster = start_etcd(tend, work)
    return tend, trials, work, etcd, cluster


def main():
    tend, trials, work, etcd, cluster = setup("cluster", 200)
    procs = []
    try:
        inp, out = os.path.join(work, "in"), os.path.join(work, "out")
        write_atomic(inp, "v0")
        prog_a = os.path.join(work, "a.mcl")
        prog_b = os.path.join(work, "b.mcl")
        with open(prog_a, "w") as f:
            f.write('import "os"\nkv "bench" { key => "bench", value => os.readfile("%s"), }\n' % inp)
        with open(prog_b, "w") as f:
            f.write('import "world"\n$v = world.getval("bench")\n'
                    'file "%s" { state => "exists", content => $v->value, }\n' % out)

        def agent(name, prog, seeds=True):
            args = [tend, "--hostname", name, "run", prog, "--prefix", os.path.join(work, name)]
            if seeds:
                args += cluster.flags
            p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(p)
            return p

        agent("ha", prog_a)
        b = agent("hb", prog_b)
        times = propagation(inp, out, "v", trials, "kv")
        time.sleep(1)
        rss_cluster = rss_kib(b.pid)
        prog_l = os.path.join(work, "l.mcl")
        with open(prog_b) as f, open(prog_l, "w") as g:
            g.write(f.read().replace(out, out + "-local"))
        local = agent("hl", prog_l, seeds=False)
        time.sleep(2)
        rss_local = rss_kib(local.pid)
        report("kv", times)
        exported_trials(agent, work, trials)
        print("idle VmRSS: cluster agent %d KiB, local agent %d KiB, difference %d KiB"
              % (rss_cluster, rss_local, rss_cluster - rss_local))
        failover(tend, work, cluster, int(sys.argv[3]) if len(sys.argv) > 3 else 5, procs)
    finally:
        stop_all(procs, etcd, work)


def exported_trials(agent, work, trials):
    inp, out = os.path.join(work, "in2"), os.path.join(work, "out2")
    write_atomic(inp, "e0")
    prog_c, prog_d = os.path.join(work, "c.mcl"), os.path.join(work, "d.mcl")
    with open(prog_c, "w") as f:
        f.write('import "os"\n@@file "bench" { path => "/nonexistent/bench", state => "exists", '
                'content => os.readfile("%s"), }\n' % inp)
    with open(prog_d, "w") as f:
        f.write('File <<| title == "bench" |>> { path => "%s", }\n' % out)
    agent("hc", prog_c)
    agent("hd", prog_d)
    report("export", propagation(inp, out, "e", trials, "export"))


def propagation(inp, out, prefix, trials, what):
    """Writes `prefix`1..N into `inp` and times each until `out` holds it (ms, sorted)."""
    wait(lambda: read(out) == prefix + "0", 30, "the first %s value" % what)
    times = []
    for i in range(1, trials + 1):
        value = "%s%d" % (prefix, i)
        start = time.perf_counter()
        write_atomic(inp, value)
        wait(lambda: read(out) == value, 10, "%s trial %d" % (what, i))
        times.append((time.perf_counter() - start) * 1000)
        time.sleep(0.02)
    times.sort()
    return times


def report(what, times):
    print("%s, trials=%d p50=%.2f ms p90=%.2f ms p99=%.2f ms max=%.2f ms"
          % (what, len(times), pct(times, 50), pct(times, 90), pct(times, 99), times[-1]))


def leader(cluster):
    out = subprocess.run(["etcdctl"] + cluster.ctl + ["get", "--prefix", "/_tend/schedule/leader/",
                          "--sort-by=CREATE", "--order=ASCEND", "--limit=1", "--print-value-only"],
                         env=dict(os.environ, ETCDCTL_API="3"), capture_output=True, text=True)
    return out.stdout.strip()


def failover(tend, work, cluster, trials, procs):
    out = os.path.join(work, "sched")
    os.makedirs(out, exist_ok=True)
    prog = os.path.join(work, "s.mcl")
    with open(prog, "w") as f:
        f.write('import "world"\nimport "fmt"\nschedule "xs" { strategy => "rr", max => 2, }\n'
                '$set = world.schedule("xs")\n'
                'file "%s/${hostname}" { state => "exists", content => fmt.printf("%%v\\n", $set), }\n' % out)
    hosts = ["s1", "s2", "s3"]

    def start(h):
        p = subprocess.Popen([tend, "--hostname", h, "run", prog, "--prefix", os.path.join(work, "st-" + h),
                              "--world-ttl", "3"] + cluster.flags,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(p)
        return p

    agents = {h: start(h) for h in hosts}

    def chosen(h):
        text = read(os.path.join(out, h)) or ""
        return sorted(x.strip('" ') for x in text.strip().strip("[]").split(",") if x.strip())

    def agreed(on):
        sets = [chosen(h) for h in on]
        return sets[0] if len(sets[0]) == 2 and all(x == sets[0] for x in sets) else None

    wait(lambda: agreed(hosts), 30, "a first choice")
    times = []
    for _ in range(trials):
        now = agreed(hosts)
        lead = leader(cluster)
        victim = now[0] if now[0] != lead else now[1]
        survivors = [h for h in hosts if h != victim]
        agents[victim].kill()
        start_t = time.perf_counter()
        wait(lambda: agreed(survivors) == survivors, 30, "the failover")
        times.append(time.perf_counter() - start_t)
        agents[victim].wait()
        agents[victim] = start(victim)
        wait(lambda: agreed(hosts) is not None and chosen(victim) == agreed(survivors), 30, "the victim back")
    times.sort()
    print("schedule failover after SIGKILL (world-ttl 3 s), %d trials: median %.2f s, max %.2f s"
          % (trials, times[len(times) // 2], times[-1]))


if __name__ == "__main__":
    main()
