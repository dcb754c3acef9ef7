//! root's password for the installed machine: given as an `openssl passwd -6` hash, or
//! asked for on the terminal and hashed here (SHA-512 crypt, as glibc's `crypt(3)` and
//! anaconda read it). The password itself is never stored, printed or passed on.

use sha2::{Digest, Sha512};
use std::io::{BufRead, IsTerminal, Write};

/// The length of a hash with a 16-character salt and the default rounds.
const HASH_LEN: usize = 106;

/// `hash` when it has the form of an `openssl passwd -6` hash; an error saying so (and
/// never showing it) otherwise.
pub fn checked_hash(from: &str, hash: &str) -> Result<String, String> {
    let well_formed = hash.len() == HASH_LEN
        && hash.starts_with("$6$")
        && hash[3..].split_once('$').is_some_and(|(salt, digest)| salt.len() == 16 && digest.len() == 86)
        && hash[3..].bytes().all(|b| b == b'$' || crypt_char(b));
    if well_formed {
        Ok(hash.to_string())
    } else {
        Err(format!(
            "{from} is not an `openssl passwd -6` hash ($6$, a 16-character salt, $, 86 characters: {HASH_LEN} in all)"
        ))
    }
}

/// crypt's base-64 digits, in their order (salts are drawn from them too).
const ALPHABET: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fn crypt_char(b: u8) -> bool {
    ALPHABET.contains(&b)
}

/// Asks for the password twice on the terminal (without echo) and hashes it with a
/// random salt; from a pipe, reads one line.
pub fn ask() -> Result<String, String> {
    let stdin = std::io::stdin();
    let password = if stdin.is_terminal() {
        let first = read_hidden("provisioner: root password for the installed machine: ")?;
        let again = read_hidden("provisioner: the same password again: ")?;
        if first != again {
            return Err("the two passwords differ".into());
        }
        first
    } else {
        let mut line = String::new();
        stdin.lock().read_line(&mut line).map_err(|e| format!("cannot read the password from stdin: {e}"))?;
        line.trim_end_matches(['\n', '\r']).to_string()
    };
    if password.is_empty() {
        return Err("no password given (give --password HASH or --password-file FILE, or type one)".into());
    }
    Ok(sha512_crypt(password.as_bytes(), &random_salt()))
}

/// One line from the terminal with echo off (restored however the read ends).
fn read_hidden(prompt: &str) -> Result<String, String> {
    let saved = echo(None).map_err(|e| format!("cannot read the terminal's settings: {e}"))?;
    crate::stderr::print(prompt);
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let read = std::io::stdin().lock().read_line(&mut line);
    let _ = echo(Some(saved));
    crate::stderr::line("");
    read.map_err(|e| format!("cannot read the password: {e}"))?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

/// Turns stdin's echo off and gives the settings it had (`None`), or restores settings.
#[allow(unsafe_code)]
fn echo(restore: Option<libc::termios>) -> std::io::Result<libc::termios> {
    // SAFETY: termios is plain data that tcgetattr fills; both calls only read or write
    // the struct given and the settings of file descriptor 0.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(0, &mut t) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let next = match restore {
            Some(saved) => saved,
            None => {
                let mut quiet = t;
                quiet.c_lflag &= !libc::ECHO;
                quiet
            }
        };
        if libc::tcsetattr(0, libc::TCSANOW, &next) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(t)
    }
}

fn random_salt() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..16).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// SHA-512 crypt with the default 5000 rounds: `$6$SALT$DIGEST` (Ulrich Drepper's
/// "Unix crypt using SHA-256 and SHA-512" specification).
pub fn sha512_crypt(password: &[u8], salt: &str) -> String {
    let salt = &salt.as_bytes()[..salt.len().min(16)];
    let rounds = 5000;
    let alternate = Sha512::new().chain_update(password).chain_update(salt).chain_update(password).finalize();
    let mut a = Sha512::new().chain_update(password).chain_update(salt);
    a.update(repeated(&alternate, password.len()));
    let mut n = password.len();
    while n > 0 {
        if n & 1 == 1 {
            a.update(alternate);
        } else {
            a.update(password);
        }
        n >>= 1;
    }
    let mut c = a.finalize();
    let mut dp = Sha512::new();
    for _ in 0..password.len() {
        dp.update(password);
    }
    let p = repeated(&dp.finalize(), password.len());
    let mut ds = Sha512::new();
    for _ in 0..16 + usize::from(c[0]) {
        ds.update(salt);
    }
    let s = repeated(&ds.finalize(), salt.len());
    for i in 0..rounds {
        let mut h = Sha512::new();
        if i % 2 == 1 {
            h.update(&p);
        } else {
            h.update(c);
        }
        if i % 3 != 0 {
            h.update(&s);
        }
        if i % 7 != 0 {
            h.update(&p);
        }
        if i % 2 == 1 {
            h.update(c);
        } else {
            h.update(&p);
        }
        c = h.finalize();
    }
    format!("$6${}${}", String::from_utf8_lossy(salt), encode(&c))
}

/// `digest` repeated (and cut) to `len` bytes.
fn repeated(digest: &[u8], len: usize) -> Vec<u8> {
    digest.iter().copied().cycle().take(len).collect()
}

/// crypt's base-64 of a SHA-512 digest: bytes taken three at a time in its fixed order,
/// each group written least significant six bits first.
fn encode(d: &[u8]) -> String {
    let mut out = String::with_capacity(86);
    let mut put = |bytes: u32, chars: usize| {
        let mut w = bytes;
        for _ in 0..chars {
            out.push(ALPHABET[(w & 0x3f) as usize] as char);
            w >>= 6;
        }
    };
    // Groups (i, i+21, i+42) rotate which of the three leads, as the specification lists.
    for k in 0..21 {
        let (x, y, z) = (k, k + 21, k + 42);
        let (b2, b1, b0) = match k % 3 {
            0 => (x, y, z),
            1 => (y, z, x),
            _ => (z, x, y),
        };
        put((u32::from(d[b2]) << 16) | (u32::from(d[b1]) << 8) | u32::from(d[b0]), 4);
    }
    put(u32::from(d[63]), 2);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_as_openssl_passwd_6_does() {
        // `openssl passwd -6 -salt saltsaltsaltsalt hunter2`
        let hash = sha512_crypt(b"hunter2", "saltsaltsaltsalt");
        assert_eq!(hash.len(), HASH_LEN);
        assert_eq!(hash, OPENSSL_HUNTER2);
        assert!(checked_hash("--password", &hash).is_ok());
    }

    const OPENSSL_HUNTER2: &str =
        "$6$saltsaltsaltsalt$dJX0KuyM7nCXuBPN.nYtdrJDotQEB1rFBumzix6FHzliKxLBinGY49pMJNvCoNf9fHmNyZ1IgX/glbcKhuXoh.";

    #[test]
    fn a_hash_of_the_wrong_form_is_refused_without_showing_it() {
        let e = checked_hash("--password", "plaintext-password").unwrap_err();
        assert!(!e.contains("plaintext-password"), "{e}");
        assert!(checked_hash("--password", &"#".repeat(HASH_LEN)).is_err());
        let short_salt = format!("$6$abc${}", "a".repeat(99));
        assert!(checked_hash("--password", &short_salt).is_err());
    }
}
