//! `tend deploy --seeds URL PATH`: type-checks the program, bundles its files and stores
//! it in the cluster as the next deploy; every agent that follows deploys (`tend run
//! --seeds URL` without a PATH) then runs it with its own host name, facts and world.

use crate::compile::{self, Report};
use std::path::Path;
use std::process::ExitCode;
use world::Parent;

/// `parent`: the deploy this one must follow (refused if another landed since), unless
/// `force`; without it, the deploy lands after whatever is latest.
/// After it lands, only the `keep` latest deploys (and their files) are kept.
/// Where a deploy goes and how it is signed.
pub struct Target {
    pub seeds: Vec<String>,
    pub tls: Option<world::Tls>,
    /// `--sign KEY`.
    pub sign: Option<std::path::PathBuf>,
}

pub fn run(
    path: &Path,
    target: &Target,
    parent: Option<u64>,
    force: bool,
    keep: u64,
    hostname: Option<String>,
) -> ExitCode {
    let seeds = &target.seeds;
    if seeds.is_empty() {
        crate::stderr::line(format_args!("error: `tend deploy` needs --seeds: deploys are kept by an etcd cluster"));
        return ExitCode::from(2);
    }
    let signer = match target.sign.as_deref().map(world::signing::Signer::load).transpose() {
        Ok(signer) => signer,
        Err(e) => {
            crate::stderr::line(format_args!("error: --sign {e}"));
            return ExitCode::from(2);
        }
    };
    let (_, catalog) = compile::catalog(hostname.as_deref());
    let (program, sources, _) = match compile::compile_or_report(path, &catalog, Report::Human) {
        Ok(x) => x,
        Err(code) => {
            crate::stderr::line(format_args!("error: not deployed: the program does not compile"));
            return code;
        }
    };
    let bundle = if path.is_dir() {
        world::bundle::of_tree(&program.root, &program.entry)
    } else {
        let own = sources.files().map(|(_, f)| f.name.as_str()).filter(|n| !n.starts_with(crate::modules::MOUNT));
        world::bundle::of_files(&program.root, &program.entry, own)
    };
    let bundle = bundle.and_then(|b| with_modules(b, &program, sources.files().map(|(_, f)| f.name.as_str())));
    let bundle = match bundle {
        Ok(b) => b,
        Err(e) => {
            crate::stderr::line(format_args!("error: not deployed: {e}"));
            return ExitCode::from(1);
        }
    };
    let parent = match parent {
        Some(n) if !force => Parent::Exactly(n),
        _ => Parent::Latest,
    };
    let rt = match super::one_shot_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let me = crate::services::world_hostname(hostname.as_deref());
    let state = crate::services::default_state_dir();
    let deployed = rt.block_on(async {
        let config = crate::services::world_config(seeds, target.tls.clone(), Some(&me), &state).observing();
        let world = world::connect(config).await.map_err(|e| e.to_string())?;
        let id = world.deploy(&bundle, parent, signer.as_ref()).await.map_err(|e| e.to_string())?;
        match world.collect_deploys(keep).await {
            Ok((0, 0)) => {}
            Ok((deploys, files)) => tracing::info!(deploys, files, "old deploys collected"),
            Err(e) => tracing::warn!(error = %e, "old deploys were not collected"),
        }
        Ok::<_, String>(id)
    });
    match deployed {
        Ok(id) => {
            let bytes: usize = bundle.files.values().map(Vec::len).sum();
            let signed = signer.as_ref().map(|s| format!(", signed by key {}", s.key_id())).unwrap_or_default();
            crate::stdout::line(format_args!(
                "deployed {id}: {} file(s), {bytes} bytes, entry {}{signed}",
                bundle.files.len(),
                bundle.entry
            ));
            ExitCode::SUCCESS
        }
        Err(e) => {
            crate::stderr::line(format_args!("error: {e}"));
            ExitCode::from(1)
        }
    }
}

/// The bundle with every module the program read from the module path, each whole (its
/// metadata.yaml and `files/` too), so that agents never fetch: a module's directory is
/// the nearest one above a file read from it that holds a metadata.yaml.
fn with_modules<'a>(
    mut bundle: world::bundle::Bundle,
    program: &crate::loader::ProgramPath,
    read: impl Iterator<Item = &'a str>,
) -> Result<world::bundle::Bundle, String> {
    let mut roots = std::collections::BTreeSet::new();
    for name in read.filter(|n| n.starts_with(crate::modules::MOUNT)) {
        let mut dir = name.rsplit_once('/').map_or("", |(d, _)| d);
        let root = loop {
            let has_meta = program.real(&format!("{dir}/metadata.yaml")).is_some_and(|p| p.is_file());
            if has_meta || !dir.starts_with(crate::modules::MOUNT) {
                break has_meta.then_some(dir);
            }
            dir = dir.rsplit_once('/').map_or("", |(d, _)| d);
        };
        match root {
            Some(root) => {
                roots.insert(root.to_string());
            }
            // A module without metadata.yaml: the files read from it.
            None => {
                let real = program.real(name).ok_or_else(|| format!("`{name}` is outside the module path"))?;
                let bytes = std::fs::read(&real).map_err(|e| format!("cannot read `{}`: {e}", real.display()))?;
                bundle.files.insert(name.to_string(), bytes);
            }
        }
    }
    for root in roots {
        let real = program.real(&root).ok_or_else(|| format!("`{root}` is outside the module path"))?;
        bundle = world::bundle::add_tree(bundle, &real, &root)?;
    }
    Ok(bundle)
}
