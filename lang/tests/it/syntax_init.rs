//! The Init stage (`lang::init::check`): structural validation after parsing.

use crate::syntax_support;

use lang::diag::Stage;
use syntax_support::parse_ok;

/// The messages init reports for `text` (which must parse).
fn init_errors(text: &str) -> Vec<String> {
    let file = parse_ok(text);
    let diags = lang::init::check(&file);
    assert!(diags.iter().all(|d| d.stage == Stage::Init));
    diags.iter().map(|d| d.message.clone()).collect()
}

#[test]
fn valid_programs_pass() {
    let text = "$m = {\"a\" => 1, \"b\" => 2}\n$s = struct{a => 1, b => 2}\ntest \"t\" {\n\tanotherstr => \"x\",\n\
                \tDepend => Test[\"u\"],\n\tMeta:noop => true,\n\tMeta:retry => 3,\n}\nfor $i, $v in $l {\n\
                \tif true {\n\t\t$x = $ns.y\n\t}\n}\nimport \"fmt\"\n";
    assert_eq!(init_errors(text), Vec::<String>::new());
}

#[test]
fn duplicate_resource_fields_and_meta_entries() {
    assert_eq!(
        init_errors("test \"t\" {\n\ta => 1,\n\ta => 1,\n\tMeta:noop => true,\n\tMeta:noop => false,\n}\n"),
        ["resource has duplicate field of: a", "resource has duplicate meta entry of: noop"]
    );
}

#[test]
fn edge_properties_and_meta_names_are_checked() {
    assert_eq!(
        init_errors("test \"t\" {\n\tRequire => Test[\"u\"],\n\tMeta:bogus => 1,\n\tNotify => Test[\"v\"],\n}\n"),
        ["invalid property: `require`", "invalid property: `bogus`"]
    );
}

#[test]
fn variable_names_with_double_underscores_are_rejected() {
    assert_eq!(
        init_errors("$a__b = 1\n$c = $d__e\n"),
        ["invalid variable name: `$a__b`", "invalid variable name: `$d__e`"]
    );
}

#[test]
fn literal_map_keys() {
    assert_eq!(init_errors("$m = {\"k1\" => 1, \"k2\" => 2, \"k2\" => 3}\n"), ["duplicate map key: \"k2\""]);
    assert_eq!(init_errors("$m = {1 => 1, 1 => 2}\n"), ["duplicate map key: 1"]);
    assert_eq!(
        init_errors("$m = {\"a\" => 1, 2 => 2}\n"),
        ["inconsistent map key type: base kind does not match (str != int)"]
    );
    assert_eq!(init_errors("$m = {[\"a\"] => 1}\n"), ["map key type []str is not hashable"]);
    // Keys that are not literal constants are left to later stages.
    assert_eq!(init_errors("$m = {$a => 1, $a => 2}\n"), Vec::<String>::new());
}

#[test]
fn duplicate_struct_literal_fields() {
    assert_eq!(init_errors("$s = struct{x => 1, x => 2}\n"), ["duplicate struct field name of: `x`"]);
}

#[test]
fn imports_are_not_allowed_in_loops() {
    assert_eq!(
        init_errors(
            "for $i, $v in $l {\n\timport \"thing.mcl\"\n}\nforkv $k, $v in $m {\n\tif true {\n\t\timport \"fmt\"\n\t}\n}\n"
        ),
        ["a StmtImport can't be contained inside a StmtFor", "a StmtImport can't be contained inside a StmtForKV"]
    );
    assert_eq!(init_errors("class c {\n\timport \"fmt\"\n}\nif true {\n\timport \"fmt\"\n}\n"), Vec::<String>::new());
}

#[test]
fn checks_reach_nested_expressions() {
    assert_eq!(init_errors("$f = func($x) {\n\t[{1 => 1, 1 => 2}]\n}\n"), ["duplicate map key: 1"]);
    assert_eq!(
        init_errors("test \"t\" {\n\ta => f(struct{y => 1, y => 2}),\n}\n"),
        ["duplicate struct field name of: `y`"]
    );
}

#[test]
fn deep_chains_pass_every_stage_without_overflowing() {
    let text = format!("$x = \"a\"{}\n", " + \"${b}\"".repeat(390));
    let file = parse_ok(&text);
    assert!(lang::init::check(&file).is_empty());
    let (_, diags) = lang::interpolate::run(file);
    assert!(diags.is_empty());
}
