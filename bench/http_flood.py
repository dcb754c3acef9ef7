#!/usr/bin/env python3
"""Holds N half-sent requests open against a `tend run` http:server and samples what the
daemon holds meanwhile: its open descriptors and resident memory, every half second, then
whether a file beside the server is still repaired. Issue 44, defect 7's figures.

usage: bench/http_flood.py TEND [N] [READ_TIMEOUT]   (READ_TIMEOUT empty: the default)
"""
import os, resource, shutil, socket, subprocess, sys, tempfile, time

tend = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
read_timeout = sys.argv[3] if len(sys.argv) > 3 else ""
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
n = min(n, hard - 200)

d = tempfile.mkdtemp()
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
managed = os.path.join(d, "managed")
extra = f"\tread_timeout => {read_timeout},\n" if read_timeout else ""
with open(os.path.join(d, "main.mcl"), "w") as f:
    f.write(f'http:server "web" {{\n\taddress => "127.0.0.1:{port}",\n{extra}}}\n'
            f'file "{managed}" {{\n\tstate => "exists",\n\tcontent => "kept\\n",\n}}\n')
agent = subprocess.Popen(["sh", "-c", f"ulimit -n 2048; exec {tend} run {d}/main.mcl --prefix {d}/state"],
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "stderr"), "w"))

def held():
    fds = len(os.listdir(f"/proc/{agent.pid}/fd"))
    rss = next(int(l.split()[1]) for l in open(f"/proc/{agent.pid}/status") if l.startswith("VmRSS"))
    return fds, rss / 1024

while not os.path.exists(managed):
    time.sleep(0.05)
time.sleep(0.5)
print(f"idle: {held()[0]} fds, {held()[1]:.1f} MiB")
conns, refused = [], 0
start = time.time()
for _ in range(n):
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=2)
        c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        conns.append(c)
    except OSError:
        refused += 1
print(f"{len(conns)} half-sent requests open ({refused} refused) in {time.time() - start:.2f} s")
os.remove(managed)
t0 = time.time()
while not os.path.exists(managed) and time.time() - t0 < 10:
    time.sleep(0.01)
print(f"drift repaired during the flood in {(time.time() - t0) * 1000:.0f} ms")
for i in range(30):
    fds, rss = held()
    print(f"t={time.time() - start:5.1f} s  {fds:5d} fds  {rss:6.1f} MiB")
    if i > 4 and fds < 100:
        break
    time.sleep(0.5)
agent.terminate()
agent.wait()
shutil.rmtree(d)
