//! `tend provisioner` end to end: the embedded provisioner module run by the real binary.
//!
//! The install test runs the provisioner in a network namespace of its own, serving a
//! second namespace over a veth pair, with a Fedora mirror faked by busybox's httpd
//! (kernel and initrd of known content) and boot loaders faked by files in temporary
//! directories (`--syslinux-dir`, `--uefi-dir`): a machine's side of an install is played
//! by busybox's `udhcpc` and `tftp` and curl, as firmware, boot loader and installer would
//! ask. Everything else is real: DHCP, TFTP and HTTP servers, the caching proxy, the
//! downloads, the kickstart and the callback that records the install as done. Needs
//! root, `ip netns`, busybox, wget and curl; skipped without them unless
//! `TEND_REQUIRE_DHCP=1`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const TEND: &str = env!("CARGO_BIN_EXE_tend");

/// `openssl passwd -6 -salt saltsaltsaltsalt hunter2`.
const HASH: &str =
    "$6$saltsaltsaltsalt$dJX0KuyM7nCXuBPN.nYtdrJDotQEB1rFBumzix6FHzliKxLBinGY49pMJNvCoNf9fHmNyZ1IgX/glbcKhuXoh.";

fn tend(args: &[&str]) -> Output {
    Command::new(TEND).arg("provisioner").args(args).output().expect("tend runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Options every run here shares: nothing fetched from the internet, no firewalld, every
/// directory under `dir`. Each is a flag and its value; [`with`] replaces or adds some.
fn offline(dir: &Path) -> Vec<(String, String)> {
    let sl = dir.join("syslinux");
    let ue = dir.join("uefi");
    for (d, files) in [
        (&sl, &["pxelinux.0", "ldlinux.c32", "vesamenu.c32", "libcom32.c32", "libutil.c32"][..]),
        (&ue, &["shim.efi", "shimx64.efi", "grubx64.efi"][..]),
    ] {
        std::fs::create_dir_all(d).unwrap();
        for f in files {
            std::fs::write(d.join(f), format!("loader {f}\n")).unwrap();
        }
    }
    let path = |p: PathBuf| p.display().to_string();
    [
        ("--interface", "lo".to_string()),
        ("--dversion", "42".to_string()),
        ("--password", HASH.to_string()),
        ("--ipxe-iso", String::new()),
        ("--ipxe-efi", String::new()),
        ("--firewalld", "false".to_string()),
        ("--syslinux-dir", path(sl)),
        ("--uefi-dir", path(ue)),
        ("--prefix", path(dir.join("cache"))),
        ("--state-dir", path(dir.join("state"))),
    ]
    .into_iter()
    .map(|(f, v)| (f.to_string(), v))
    .collect()
}

/// `base` with the options in `changes` replaced (or added), then the bare `flags`.
fn with(base: &[(String, String)], changes: &[(&str, &str)], flags: &[&str]) -> Vec<String> {
    let mut opts: Vec<(String, String)> = base.to_vec();
    for (flag, value) in changes {
        match opts.iter_mut().find(|(f, _)| f == flag) {
            Some(o) => o.1 = value.to_string(),
            None => opts.push((flag.to_string(), value.to_string())),
        }
    }
    let mut out: Vec<String> = opts.into_iter().flat_map(|(f, v)| [f, v]).collect();
    out.extend(flags.iter().map(|f| f.to_string()));
    out
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn the_provisioner_type_checks_as_mgmt_tests_it() {
    // mgmt's own test: unification with a dummy interface and password, `--check`.
    let out = tend(&["--interface", "lo", "--dversion", "42", "--password", HASH, "--check"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("ok: 2 file(s)"), "{err}");
    assert!(!err.contains("arning"), "the embedded module's warnings are not the user's: {err}");
}

#[test]
fn the_graph_follows_the_options() {
    let dir = tempfile::tempdir().unwrap();
    let base = offline(dir.path());
    let mac = "52:54:00:AB:CD:EF";
    let args = with(&base, &[("--mac", mac), ("--ip", "192.168.42.50/24")], &["--graph", "--bios"]);
    let out = tend(&strs(&args));
    let graph = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The machine by its MAC (normalised), with the BIOS menu under the name pxelinux asks.
    assert!(graph.contains("Vertex: dhcp:host[host0]"), "{graph}");
    assert!(graph.contains("tftp:file[/pxelinux.cfg/01-52-54-00-ab-cd-ef]"), "{graph}");
    assert!(graph.contains("http:server:file[/fedora/kickstart/52:54:00:ab:cd:ef.ks]"), "{graph}");
    assert!(!graph.contains("grub.cfg"), "a BIOS host gets no UEFI menu: {graph}");
    // Loaders given: nothing installed or downloaded for them; nothing from boot.ipxe.org.
    assert!(!graph.contains("pkg[syslinux]") && !graph.contains("uefi-download"), "{graph}");
    assert!(!graph.contains("ipxe.iso"), "{graph}");
    assert!(!graph.contains(HASH), "the password hash is not shown");

    // By default: any machine, UEFI, syslinux installed, shim and grub taken from the release.
    let out = tend(&["--interface", "lo", "--dversion", "42", "--password", HASH, "--graph", "--firewalld", "false"]);
    let graph = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for want in [
        "dhcp:range[host0]",
        "pkg[syslinux]",
        "tftp:file[/uefi/grub.cfg]",
        "exec[provisioner-uefi-extract-fedora42-x86_64]",
    ] {
        assert!(graph.contains(want), "{want} missing: {graph}");
    }
}

#[test]
fn bad_options_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let base = offline(dir.path());
    let refused = |change: (&str, &str), says: &str| {
        let out = tend(&strs(&with(&base, &[change], &["--check"])));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{change:?}: {err}");
        assert!(err.contains(says), "{change:?} should say {says:?}: {err}");
        err
    };
    refused(("--ip", "10.0.0.5/24"), "--ip 10.0.0.5/24 is not inside --network 192.168.42.0/24");
    refused(("--router", "192.168.42.1"), "is not an IPv4 address with its prefix length");
    refused(("--ip", "192.168.42.1/24"), "is this machine's own address");
    refused(("--mac", "52:54:00:zz:00:01"), "is not a MAC address");
    refused(("--dversion", "rawhide"), "is not a Fedora version");
    refused(("--flavour", "workstation"), "title case");
    refused(("--syslinux-dir", "/nonexistent/syslinux"), "--syslinux-dir `/nonexistent/syslinux`");
    refused(("--distro", "debian"), "only fedora");
    // A password that is not a hash is refused, and never echoed.
    let err = refused(("--password", "hunter2-in-clear"), "is not an `openssl passwd -6` hash");
    assert!(!err.contains("hunter2-in-clear"), "{err}");

    // Handoff code is type-checked here, with its file and line, not on the new machine.
    let code = dir.path().join("code");
    std::fs::create_dir_all(&code).unwrap();
    std::fs::write(code.join("main.mcl"), "file \"/tmp/x\" {\n\tmode => \"0644\",\n\tcontent => 42,\n}\n").unwrap();
    let code_dir = code.display().to_string();
    let err = refused(("--handoff-code", &code_dir), "does not type-check");
    assert!(err.contains("main.mcl:3"), "the error names the file and line: {err}");
    std::fs::write(code.join("main.mcl"), "file \"/tmp/x\" {\n\tcontent => \"ok\",\n}\n").unwrap();
    let out = tend(&strs(&with(&base, &[("--handoff-code", &code_dir)], &["--check"])));
    assert!(out.status.success(), "{}", text(&out.stderr));

    // Without --password the password is asked for (here through a pipe) and hashed.
    let mut asked: Vec<(String, String)> = base.clone();
    asked.retain(|(f, _)| f != "--password");
    let mut child = Command::new(TEND)
        .arg("provisioner")
        .args(with(&asked, &[], &["--check"]))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"hunter2\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("hunter2"), "{}", text(&out.stderr));

    // Without --dversion the version is asked for.
    let out = tend(&["--interface", "lo", "--password", HASH, "--check"]);
    assert!(text(&out.stderr).contains("--dversion"), "{}", text(&out.stderr));
}

#[test]
fn the_embedded_module_is_a_library_programs_import() {
    // base.runner (which `tend provisioner` does not include) type-checks as a program's.
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("main.mcl");
    std::fs::write(
        &main,
        "import \"embedded/provisioner\"\n\ninclude provisioner.base(struct{\n\tinterface => \"lo\",\n\tprefix => \"/var/cache/p/\",\n}) as base\n\ninclude base.runner(struct{\n\tseeds => \"http://10.0.0.1:2379\",\n})\n",
    )
    .unwrap();
    let out = Command::new(TEND).arg("check").arg(&main).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A module tend does not have is an error that says so.
    std::fs::write(&main, "import \"embedded/nothing\"\n").unwrap();
    let out = Command::new(TEND).arg("check").arg(&main).output().unwrap();
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("embedded/nothing"), "{}", text(&out.stderr));
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).output().is_ok_and(|o| o.status.success())
}

fn have(program: &str, arg: &str) -> bool {
    Command::new(program).arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Two namespaces joined by a veth pair; the processes started in them die with it.
struct Lan {
    server: String,
    client: String,
    server_if: String,
    client_if: String,
    children: Vec<Child>,
}

impl Drop for Lan {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = Command::new("kill").arg("-INT").arg(c.id().to_string()).status();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for c in &mut self.children {
            while Instant::now() < deadline && c.try_wait().ok().flatten().is_none() {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        ip(&["netns", "del", &self.server]);
        ip(&["netns", "del", &self.client]);
    }
}

const CLIENT_MAC: &str = "02:00:5e:10:00:43";

#[allow(clippy::print_stderr, reason = "a skipped test says why")]
fn lan() -> Option<Lan> {
    let id = std::process::id() % 100_000;
    let lan = Lan {
        server: format!("tend-prov-s{id}"),
        client: format!("tend-prov-c{id}"),
        server_if: format!("tps{id}"),
        client_if: format!("tpc{id}"),
        children: Vec::new(),
    };
    let tools = have("busybox", "true") && have("wget", "--version") && have("curl", "--version");
    let ready = tools
        && ip(&["netns", "add", &lan.server])
        && ip(&["netns", "add", &lan.client])
        && ip(&["link", "add", &lan.server_if, "type", "veth", "peer", "name", &lan.client_if])
        && ip(&["link", "set", &lan.server_if, "netns", &lan.server])
        && ip(&["link", "set", &lan.client_if, "netns", &lan.client])
        && ip(&["-n", &lan.server, "link", "set", "lo", "up"])
        && ip(&["-n", &lan.client, "link", "set", "lo", "up"])
        && ip(&["-n", &lan.client, "link", "set", &lan.client_if, "address", CLIENT_MAC])
        && ip(&["-n", &lan.client, "link", "set", &lan.client_if, "up"]);
    if ready {
        return Some(lan);
    }
    drop(lan);
    let why = "needs root, `ip netns`, busybox, wget and curl";
    assert!(std::env::var("TEND_REQUIRE_DHCP").as_deref() != Ok("1"), "TEND_REQUIRE_DHCP=1 but this {why}");
    eprintln!("skipped: {why}");
    None
}

fn in_ns(ns: &str, program: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, program]);
    c
}

fn eventually(what: &str, limit: Duration, mut f: impl FnMut() -> Option<String>) -> String {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// What the client gets over HTTP from the provisioner (`None` until it answers 200).
fn http(lan: &Lan, path: &str) -> Option<String> {
    let out = in_ns(&lan.client, "curl")
        .args(["-fsS", "--max-time", "5"])
        .arg(format!("http://10.78.0.1:4280{path}"))
        .output()
        .ok()?;
    out.status.success().then(|| text(&out.stdout))
}

fn tftp(lan: &Lan, dir: &Path, path: &str) -> Option<String> {
    let local = dir.join("tftp.out");
    let _ = std::fs::remove_file(&local);
    let ok = in_ns(&lan.client, "busybox")
        .args(["tftp", "-g", "-r", path, "-l"])
        .arg(&local)
        .arg("10.78.0.1")
        .output()
        .ok()?
        .status
        .success();
    if ok { std::fs::read_to_string(&local).ok() } else { None }
}

#[test]
fn a_machine_on_the_install_network_gets_an_address_boot_files_and_its_kickstart() {
    let Some(mut lan) = lan() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // The mirror: a release's kernel and initrd where Fedora's mirrors have them.
    let mirror = d.join("mirror");
    let pxeboot = mirror.join("releases/42/Everything/x86_64/os/images/pxeboot");
    std::fs::create_dir_all(&pxeboot).unwrap();
    std::fs::write(pxeboot.join("vmlinuz"), "the kernel\n").unwrap();
    std::fs::write(pxeboot.join("initrd.img"), "the initrd\n").unwrap();
    let httpd =
        in_ns(&lan.server, "busybox").args(["httpd", "-f", "-p", "127.0.0.1:8099", "-h"]).arg(&mirror).spawn().unwrap();
    lan.children.push(httpd);

    let password_file = d.join("password");
    std::fs::write(&password_file, format!("{HASH}\n")).unwrap();
    let state: PathBuf = d.join("state");
    let mut base = offline(d);
    base.retain(|(f, _)| f != "--password");
    let password_file = password_file.display().to_string();
    // Code the installed machine will run, handed over with the install.
    let code = d.join("site");
    std::fs::create_dir_all(&code).unwrap();
    std::fs::write(code.join("main.mcl"), "print \"hello\" {\n\tmsg => \"from the provisioner\",\n}\n").unwrap();
    let code = code.display().to_string();
    let args = with(
        &base,
        &[
            ("--interface", &lan.server_if),
            ("--network", "10.78.0.0/24"),
            ("--router", "10.78.0.1/24"),
            ("--ip", "10.78.0.42/24"),
            ("--mac", CLIENT_MAC),
            ("--mirror", "http://127.0.0.1:8099/"),
            ("--password-file", &password_file),
            ("--handoff-code", &code),
            ("--handoff-hostname", "node1"),
        ],
        &[],
    );
    let log = std::fs::File::create(d.join("tend.log")).unwrap();
    let provisioner =
        in_ns(&lan.server, TEND).arg("provisioner").args(&args).stdout(Stdio::null()).stderr(log).spawn().unwrap();
    lan.children.push(provisioner);
    let tend_log = || std::fs::read_to_string(d.join("tend.log")).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !tend_log().contains("provisioner: ready on") {
        assert!(Instant::now() < deadline, "the provisioner is not ready after 60 s:\n{}", tend_log());
        std::thread::sleep(Duration::from_millis(300));
    }

    // DHCP: the address pinned to the MAC and the UEFI loader to fetch by TFTP.
    let lease = d.join("lease");
    let script = d.join("lease.sh");
    std::fs::write(&script, "#!/bin/sh\n[ \"$1\" = bound ] || exit 0\nip addr add \"$ip/24\" dev \"$interface\"\nfor v in ip router siaddr boot_file; do eval \"echo $v=\\$$v\"; done > \"$LEASE\"\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = in_ns(&lan.client, "busybox")
        .args(["udhcpc", "-i", &lan.client_if, "-f", "-q", "-n", "-t", "10", "-T", "1", "-O", "bootfile", "-s"])
        .arg(&script)
        .env("LEASE", &lease)
        .output()
        .unwrap();
    let got =
        std::fs::read_to_string(&lease).unwrap_or_else(|_| panic!("no lease: {}\n{}", text(&out.stderr), tend_log()));
    for want in ["ip=10.78.0.42", "router=10.78.0.1", "siaddr=10.78.0.1", "boot_file=/uefi/shim.efi"] {
        assert!(got.lines().any(|l| l == want), "{want} not in the lease: {got}");
    }

    // TFTP: the loader, and the grub menu made for this MAC, which names its kickstart.
    // Each file is a resource of its own: `ready` waits for the servers, not for every file.
    let t = Duration::from_secs(20);
    assert_eq!(eventually("the shim", t, || tftp(&lan, d, "/uefi/shim.efi")), "loader shim.efi\n");
    let menu = eventually("the grub menu", t, || tftp(&lan, d, "/uefi/grub.cfg-01-02-00-5e-10-00-43"));
    let ks_url = format!("inst.ks=http://10.78.0.1:4280/fedora/kickstart/{CLIENT_MAC}.ks");
    assert!(menu.contains(&ks_url), "{menu}");
    assert!(menu.contains("linuxefi /fedora42-x86_64/vmlinuz"), "{menu}");

    // The kernel and initrd came from the mirror through the provisioner's proxy.
    let kernel = eventually("the kernel", Duration::from_secs(30), || http(&lan, "/fedora42-x86_64/vmlinuz"));
    assert_eq!(kernel, "the kernel\n");
    assert_eq!(eventually("the initrd", t, || tftp(&lan, d, "/fedora42-x86_64/initrd.img")), "the initrd\n");
    let proxied =
        eventually("the proxy", t, || http(&lan, "/fedora/releases/42/Everything/x86_64/os/images/pxeboot/initrd.img"));
    assert_eq!(proxied, "the initrd\n");

    // The kickstart: the password hash, the install tree and the callback.
    let ks = eventually("the kickstart", t, || http(&lan, &format!("/fedora/kickstart/{CLIENT_MAC}.ks")));
    assert!(ks.contains(&format!("rootpw --iscrypted --allow-ssh {HASH}")), "{ks}");
    assert!(ks.contains("url --url=\"http://10.78.0.1:4280/fedora/releases/42/Everything/x86_64/os/\""), "{ks}");
    assert!(ks.contains(&format!("http://10.78.0.1:4280/action/done/mac={CLIENT_MAC}")), "{ks}");
    assert!(ks.contains("--encrypted"), "LUKS by default: {ks}");
    let on_disk = d.join(format!("cache/http/kickstart/{CLIENT_MAC}.ks"));
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&on_disk).unwrap().permissions());
    assert_eq!(mode & 0o077, 0, "the kickstart holds the hash: root's alone on disk");
    // The handoff: tend and the code fetched from here, run by a systemd unit.
    assert!(ks.contains("--hostname=node1"), "{ks}");
    assert!(ks.contains("http://10.78.0.1:4280/tend/binary"), "{ks}");
    assert!(ks.contains(&format!("http://10.78.0.1:4280/tend/deploy-{CLIENT_MAC}.tar.gz")), "{ks}");
    assert!(ks.contains("systemctl enable tend.service"), "{ks}");
    let tarball = d.join("code.tar.gz");
    eventually("the code's tarball", t, || {
        let fetched = in_ns(&lan.client, "curl")
            .args(["-fsS", "-o"])
            .arg(&tarball)
            .arg(format!("http://10.78.0.1:4280/tend/deploy-{CLIENT_MAC}.tar.gz"))
            .status()
            .ok()?;
        fetched.success().then(String::new)
    });
    let listed = Command::new("tar").arg("-tzf").arg(&tarball).output().unwrap();
    assert!(text(&listed.stdout).lines().any(|l| l.ends_with("main.mcl")), "{}", text(&listed.stdout));
    let ipxe = eventually("the iPXE menu", t, || http(&lan, &format!("/{CLIENT_MAC}.ipxe")));
    assert!(ipxe.starts_with("#!ipxe") && ipxe.contains(&ks_url), "{ipxe}");

    // The installer reports back: done, with root's public key, recorded in the world.
    let out = in_ns(&lan.client, "curl")
        .args(["-fsS", "--data-urlencode", "done=true", "--data-urlencode", "sshkey=AAAAC3NzaC1lZDI1NTE5AAAAITestKey"])
        .arg(format!("http://10.78.0.1:4280/action/done/mac={CLIENT_MAC}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let kv = |key: &str| {
        let dir = state.join("kv").join(format!("{}-{key}", CLIENT_MAC.replace(':', "%3a")));
        std::fs::read_to_string(dir.join("value")).ok()
    };
    // Each field is a flag and a kv of its own: they land independently.
    let done = eventually("the install to be recorded", Duration::from_secs(20), || kv("done").filter(|v| v == "true"));
    assert_eq!(done, "true");
    let key = "AAAAC3NzaC1lZDI1NTE5AAAAITestKey";
    eventually("root's key to be recorded", Duration::from_secs(20), || kv("sshkey").filter(|v| v == key));
    assert!(!tend_log().contains(HASH), "the hash is never logged");
}
