//! Addresses in CIDR notation (`ip/prefix`) as the network kinds read them (`net`'s
//! `addrs`, `virt:network`'s router `ip`): one parser, one set of messages.

use std::net::IpAddr;

/// `ip/prefix`, IPv4 or IPv6, the prefix no longer than the address; why not otherwise.
pub fn parse(text: &str) -> Result<(IpAddr, u8), String> {
    let (ip, prefix) = text.split_once('/').ok_or_else(|| format!("`{text}` is not in CIDR notation (ip/prefix)"))?;
    let ip: IpAddr = ip.parse().map_err(|_| format!("`{ip}` in `{text}` is not an IP address"))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let prefix: u8 = prefix
        .parse()
        .ok()
        .filter(|p| *p <= max)
        .ok_or_else(|| format!("`{prefix}` in `{text}` is not a prefix length from 0 to {max}"))?;
    Ok((ip, prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_families_parse_and_bad_forms_say_why() {
        assert_eq!(parse("10.0.0.1/8"), Ok(("10.0.0.1".parse().unwrap(), 8)));
        assert_eq!(parse("2001:db8::1/64"), Ok(("2001:db8::1".parse().unwrap(), 64)));
        assert!(parse("10.0.0.1").unwrap_err().contains("CIDR"));
        assert!(parse("10.0.0.1/33").unwrap_err().contains("from 0 to 32"));
        assert!(parse("2001:db8::1/129").unwrap_err().contains("from 0 to 128"));
        assert!(parse("host/8").unwrap_err().contains("not an IP address"));
    }
}
