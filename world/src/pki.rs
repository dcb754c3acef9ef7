//! A small PKI for a fleet that has none (`tend pki init DIR`, `tend pki issue DIR NAME`):
//! a CA, certificates it signs for hosts, operators and etcd members (each usable as a
//! server and as a client certificate), and the Ed25519 key pair that signs deploys.
//! Private keys are written 0600, whole or not at all, and never over an existing file
//! unless asked. Nothing else in tend needs this CA: any CA's PEM files work.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PKCS_ED25519, SanType,
};

/// How long the CA is valid.
const CA_DAYS: i64 = 3650;
/// How long an issued certificate is valid, unless `days` says otherwise.
pub const DEFAULT_DAYS: i64 = 825;

/// Why a PKI command did nothing (it writes all of its files or none).
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("{}: already exists (give --force to replace it)", .0.display())]
    Exists(PathBuf),
    #[error("{}: {reason}", path.display())]
    Io { path: PathBuf, reason: String },
    #[error("{}: {reason}", path.display())]
    Damaged { path: PathBuf, reason: String },
    #[error("`{0}` cannot name a certificate: use letters, digits, `.`, `_` and `-`")]
    BadName(String),
    #[error("`{0}` is not a DNS name")]
    BadDns(String),
    #[error("cannot make the certificate: {0}")]
    Make(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PkiError + '_ {
    move |e| PkiError::Io { path: path.to_path_buf(), reason: e.to_string() }
}

/// The files `init` makes in `dir`.
fn init_files(dir: &Path) -> [PathBuf; 4] {
    ["ca.crt", "ca.key", "deploy.key", "deploy.pub"].map(|f| dir.join(f))
}

/// Makes the CA (`ca.crt`, `ca.key`) and the deploy signing pair (`deploy.key`,
/// `deploy.pub`) in `dir` (created 0700 if missing). Returns the files written.
pub fn init(dir: &Path, force: bool) -> Result<Vec<PathBuf>, PkiError> {
    let files = init_files(dir);
    refuse_existing(&files, force)?;
    if !dir.is_dir() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io(dir))?;
    }
    let ca_key = KeyPair::generate().map_err(make)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = name(&format!("tend CA {}", crate::digest::sha256_prefix(ca_key.public_key_raw(), 4)));
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    validity(&mut params, CA_DAYS);
    let ca = params.self_signed(&ca_key).map_err(make)?;
    let deploy = KeyPair::generate_for(&PKCS_ED25519).map_err(make)?;
    let [ca_crt, ca_key_file, deploy_key, deploy_pub] = &files;
    write(ca_key_file, ca_key.serialize_pem().as_bytes(), 0o600, force)?;
    write(deploy_key, deploy.serialize_pem().as_bytes(), 0o600, force)?;
    write(deploy_pub, deploy.public_key_pem().as_bytes(), 0o644, force)?;
    // The certificate last: a CA file is never there without its key.
    write(ca_crt, ca.pem().as_bytes(), 0o644, force)?;
    Ok(files.to_vec())
}

/// What a certificate is issued for.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// Its CN: a host name, an operator, an etcd member (or etcd's `root`).
    pub name: String,
    pub ips: Vec<IpAddr>,
    pub dns: Vec<String>,
    /// Valid for this many days from now; negative only to make expired ones in tests.
    pub days: i64,
}

/// Makes `dir/NAME.crt` and `dir/NAME.key`, signed by the CA in `dir`. Returns the files.
pub fn issue(dir: &Path, request: &Request, force: bool) -> Result<[PathBuf; 2], PkiError> {
    if !crate::valid_hostname(&request.name) {
        return Err(PkiError::BadName(request.name.clone()));
    }
    let files = [dir.join(format!("{}.crt", request.name)), dir.join(format!("{}.key", request.name))];
    refuse_existing(&files, force)?;
    let issuer = ca(dir)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = name(&request.name);
    params.subject_alt_names = request.ips.iter().map(|ip| SanType::IpAddress(*ip)).collect();
    for dns in &request.dns {
        let san = valid_dns(dns).then(|| dns.clone().try_into().ok()).flatten();
        params.subject_alt_names.push(SanType::DnsName(san.ok_or_else(|| PkiError::BadDns(dns.clone()))?));
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    params.use_authority_key_identifier_extension = true;
    validity(&mut params, request.days);
    let key = KeyPair::generate().map_err(make)?;
    let cert = params.signed_by(&key, &issuer).map_err(make)?;
    let [crt, key_file] = &files;
    write(key_file, key.serialize_pem().as_bytes(), 0o600, force)?;
    write(crt, cert.pem().as_bytes(), 0o644, force)?;
    Ok(files)
}

/// Revokes `dir/NAME.crt`: adds its serial number to the CA's revocation list
/// `dir/crl.pem` (made if missing, every earlier revocation kept) and signs the list again.
/// Give that file to etcd as `--client-crl-file`: etcd then refuses the certificate. Returns
/// the list's path.
pub fn revoke(dir: &Path, name: &str) -> Result<PathBuf, PkiError> {
    if !crate::valid_hostname(name) {
        return Err(PkiError::BadName(name.to_string()));
    }
    let crt = dir.join(format!("{name}.crt"));
    let pem = std::fs::read(&crt).map_err(io(&crt))?;
    let damaged = |path: &Path, what: &str| PkiError::Damaged { path: path.to_path_buf(), reason: what.to_string() };
    let (_, block) = x509_parser::pem::parse_x509_pem(&pem).map_err(|_| damaged(&crt, "not a PEM certificate"))?;
    let cert = block.parse_x509().map_err(|_| damaged(&crt, "not a PEM certificate"))?;
    let serial = cert.raw_serial().to_vec();
    let now = time::OffsetDateTime::now_utc();
    let list = dir.join(CRL);
    let mut revoked = match std::fs::read(&list) {
        Ok(bytes) => revoked_in(&bytes).ok_or_else(|| damaged(&list, "not a PEM revocation list"))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io(&list)(e)),
    };
    if !revoked.iter().any(|(s, _)| *s == serial) {
        revoked.push((serial, now));
    }
    let params = rcgen::CertificateRevocationListParams {
        this_update: now,
        next_update: now + time::Duration::days(CA_DAYS),
        // Increasing with every list this CA signs.
        crl_number: rcgen::SerialNumber::from_slice(&now.unix_timestamp().to_be_bytes()),
        issuing_distribution_point: None,
        revoked_certs: revoked
            .into_iter()
            .map(|(serial, at)| rcgen::RevokedCertParams {
                serial_number: rcgen::SerialNumber::from_slice(&serial),
                revocation_time: at,
                reason_code: None,
                invalidity_date: None,
            })
            .collect(),
        key_identifier_method: rcgen::KeyIdMethod::Sha256,
    };
    let signed = params.signed_by(&ca(dir)?).map_err(make)?;
    write(&list, signed.pem().map_err(make)?.as_bytes(), 0o644, true)?;
    Ok(list)
}

/// The revocation list `revoke` keeps beside the CA.
pub const CRL: &str = "crl.pem";

/// The serial numbers a PEM revocation list holds, each with when it was revoked.
fn revoked_in(pem: &[u8]) -> Option<Vec<(Vec<u8>, time::OffsetDateTime)>> {
    let (_, block) = x509_parser::pem::parse_x509_pem(pem).ok()?;
    let (_, crl) = x509_parser::parse_x509_crl(&block.contents).ok()?;
    let revoked = crl
        .iter_revoked_certificates()
        .map(|r| {
            let at = time::OffsetDateTime::from_unix_timestamp(r.revocation_date.timestamp())
                .unwrap_or_else(|_| time::OffsetDateTime::now_utc());
            (r.raw_serial().to_vec(), at)
        })
        .collect();
    Some(revoked)
}

/// The CA in `dir`, to sign with.
fn ca(dir: &Path) -> Result<Issuer<'static, KeyPair>, PkiError> {
    let (crt, key) = (dir.join("ca.crt"), dir.join("ca.key"));
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|e| PkiError::Io {
            path: p.to_path_buf(),
            reason: format!("{e} (make a CA first with `tend pki init {}`)", dir.display()),
        })
    };
    let key_pem = read(&key)?;
    let crt_pem = read(&crt)?;
    let damaged = |path: &Path, what: &str| PkiError::Damaged { path: path.to_path_buf(), reason: what.to_string() };
    let key_pair = KeyPair::from_pem(&key_pem).map_err(|_| damaged(&key, "not a PEM private key"))?;
    Issuer::from_ca_cert_pem(&crt_pem, key_pair).map_err(|_| damaged(&crt, "not a PEM CA certificate"))
}

/// The common name (CN) of the PEM certificate `pem`, if it has one: the user etcd takes a
/// client to be when its authentication is on.
pub fn common_name(pem: &str) -> Option<String> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).ok()?;
    let cert = pem.parse_x509().ok()?;
    let cn = cert.subject().iter_common_name().next()?.as_str().ok()?.to_string();
    Some(cn)
}

/// A DNS name a certificate may hold: dot-separated labels of letters, digits and inner
/// hyphens, the first of which may be `*`.
fn valid_dns(name: &str) -> bool {
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    name.len() <= 253 && name.split('.').enumerate().all(|(i, l)| (i == 0 && l == "*") || label(l))
}

fn name(cn: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn
}

fn validity(params: &mut CertificateParams, days: i64) {
    let now = time::OffsetDateTime::now_utc();
    // An hour of slack for clocks a little behind.
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(days);
    if days < 0 {
        params.not_before = params.not_after - time::Duration::days(1);
    }
}

fn make(e: rcgen::Error) -> PkiError {
    PkiError::Make(e.to_string())
}

fn refuse_existing(files: &[PathBuf], force: bool) -> Result<(), PkiError> {
    match files.iter().find(|f| f.symlink_metadata().is_ok()) {
        Some(f) if !force => Err(PkiError::Exists(f.clone())),
        _ => Ok(()),
    }
}

/// Writes `path` whole with `mode` (a synced file beside it, then renamed over it, or, when
/// not `force`, linked only if no file took the name meanwhile).
fn write(path: &Path, bytes: &[u8], mode: u32, force: bool) -> Result<(), PkiError> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    // Made 0600: a key is never readable by others, not even for a moment.
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(io(path))?;
    file.write_all(bytes).map_err(io(path))?;
    std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(mode)).map_err(io(path))?;
    file.as_file().sync_all().map_err(io(path))?;
    let persisted = if force { file.persist(path) } else { file.persist_noclobber(path) };
    persisted.map_err(|e| match e.error.kind() {
        std::io::ErrorKind::AlreadyExists => PkiError::Exists(path.to_path_buf()),
        _ => PkiError::Io { path: path.to_path_buf(), reason: e.error.to_string() },
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn init_makes_a_ca_and_a_deploy_pair_with_private_keys_0600_and_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let pki = dir.path().join("pki");
        let files = init(&pki, false).unwrap();
        assert_eq!(files.len(), 4);
        assert_eq!(mode(&pki.join("ca.key")), 0o600);
        assert_eq!(mode(&pki.join("deploy.key")), 0o600);
        assert_eq!(mode(&pki.join("ca.crt")), 0o644);
        let ca = std::fs::read(pki.join("ca.crt")).unwrap();
        assert!(String::from_utf8_lossy(&ca).starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(std::fs::read_to_string(pki.join("deploy.pub")).unwrap().starts_with("-----BEGIN PUBLIC KEY-----"));
        let e = init(&pki, false).unwrap_err();
        assert!(matches!(e, PkiError::Exists(_)), "{e}");
        assert_eq!(std::fs::read(pki.join("ca.crt")).unwrap(), ca, "untouched");
        init(&pki, true).unwrap();
        assert_ne!(std::fs::read(pki.join("ca.crt")).unwrap(), ca, "replaced with --force");
        assert_eq!(std::fs::read_dir(&pki).unwrap().count(), 4, "no temporary file is left");
    }

    #[test]
    fn issue_signs_with_the_ca_and_refuses_bad_names_and_a_missing_ca() {
        let dir = tempfile::tempdir().unwrap();
        let request = Request {
            name: "h1".into(),
            ips: vec!["127.0.0.1".parse().unwrap()],
            dns: vec!["localhost".into()],
            days: 30,
        };
        let e = issue(dir.path(), &request, false).unwrap_err().to_string();
        assert!(e.contains("tend pki init"), "{e}");
        init(dir.path(), false).unwrap();
        let [crt, key] = issue(dir.path(), &request, false).unwrap();
        assert_eq!(mode(&key), 0o600);
        assert!(std::fs::read_to_string(&crt).unwrap().starts_with("-----BEGIN CERTIFICATE-----"));
        assert_eq!(common_name(&std::fs::read_to_string(&crt).unwrap()).as_deref(), Some("h1"));
        assert_eq!(common_name("not a certificate"), None);
        assert!(matches!(issue(dir.path(), &request, false), Err(PkiError::Exists(_))));
        let bad = Request { name: "../etc/passwd".into(), ..request.clone() };
        assert!(matches!(issue(dir.path(), &bad, false), Err(PkiError::BadName(_))));
        let bad = Request { dns: vec!["not a name".into()], name: "h2".into(), ..request };
        assert!(matches!(issue(dir.path(), &bad, false), Err(PkiError::BadDns(_))));
        assert!(!dir.path().join("h2.key").exists(), "nothing of a refused request is written");
    }

    #[test]
    fn revoking_keeps_every_earlier_revocation_in_one_signed_list() {
        let dir = tempfile::tempdir().unwrap();
        init(dir.path(), false).unwrap();
        let serial = |name: &str| {
            let pem = std::fs::read(dir.path().join(format!("{name}.crt"))).unwrap();
            let (_, block) = x509_parser::pem::parse_x509_pem(&pem).unwrap();
            block.parse_x509().unwrap().raw_serial().to_vec()
        };
        for name in ["h1", "h2", "h3"] {
            issue(dir.path(), &Request { name: name.into(), days: 1, ..Default::default() }, false).unwrap();
        }
        assert!(matches!(revoke(dir.path(), "nobody"), Err(PkiError::Io { .. })));
        let list = revoke(dir.path(), "h1").unwrap();
        revoke(dir.path(), "h2").unwrap();
        revoke(dir.path(), "h2").unwrap();
        let held: Vec<Vec<u8>> =
            revoked_in(&std::fs::read(&list).unwrap()).unwrap().into_iter().map(|(s, _)| s).collect();
        assert_eq!(held, vec![serial("h1"), serial("h2")], "h1 and h2 once each, h3 not");
        std::fs::write(&list, "garbage").unwrap();
        assert!(matches!(revoke(dir.path(), "h3"), Err(PkiError::Damaged { .. })), "a damaged list is not replaced");
    }
}
