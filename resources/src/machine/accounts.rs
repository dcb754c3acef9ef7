//! Users and groups as `user` and `group` see them: [`Accounts`], the shadow tools, and an
//! in-memory fake.

#[cfg(any(test, feature = "fakes"))]
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
#[cfg(any(test, feature = "fakes"))]
use std::sync::Mutex;

use async_trait::async_trait;
use engine::ResError;

use super::run_ok;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub uid: u32,
    pub gid: u32,
    pub home: String,
    pub shell: String,
    /// Supplementary group names.
    pub groups: BTreeSet<String>,
}

/// What `useradd`/`usermod` should set; `None` = leave alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserSpec {
    pub uid: Option<u32>,
    /// A group name or numeric gid.
    pub group: Option<String>,
    pub groups: Option<Vec<String>>,
    pub home: Option<String>,
    pub shell: Option<String>,
    pub allow_duplicate_uid: bool,
}

#[async_trait]
pub trait Accounts: Send + Sync {
    async fn user(&self, name: &str) -> Result<Option<UserInfo>, ResError>;
    /// A group's gid, if it exists.
    async fn group(&self, name: &str) -> Result<Option<u32>, ResError>;
    async fn add_user(&self, name: &str, spec: &UserSpec) -> Result<(), ResError>;
    async fn modify_user(&self, name: &str, spec: &UserSpec) -> Result<(), ResError>;
    async fn delete_user(&self, name: &str) -> Result<(), ResError>;
    async fn add_group(&self, name: &str, gid: Option<u32>) -> Result<(), ResError>;
    async fn modify_group(&self, name: &str, gid: u32) -> Result<(), ResError>;
    async fn delete_group(&self, name: &str) -> Result<(), ResError>;
    /// Files whose change means an account may have changed (watched).
    fn files(&self) -> Vec<PathBuf>;
}

/// `/etc/passwd` and `/etc/group` under a root, changed with the shadow tools.
pub struct ShadowTools {
    pub root: PathBuf,
}

impl ShadowTools {
    fn read(&self, file: &str) -> Result<String, ResError> {
        std::fs::read_to_string(self.root.join(file)).map_err(|e| ResError::new(format!("/{file}: {e}")))
    }

    fn user_args(spec: &UserSpec) -> Vec<String> {
        let mut args = Vec::new();
        let mut push = |flag: &str, v: String| {
            args.push(flag.to_string());
            args.push(v);
        };
        if let Some(uid) = spec.uid {
            push("-u", uid.to_string());
        }
        if let Some(g) = &spec.group {
            push("-g", g.clone());
        }
        if let Some(gs) = &spec.groups {
            push("-G", gs.join(","));
        }
        if let Some(h) = &spec.home {
            push("-d", h.clone());
        }
        if let Some(s) = &spec.shell {
            push("-s", s.clone());
        }
        if spec.allow_duplicate_uid {
            args.push("-o".into());
        }
        args
    }

    async fn tool(&self, tool: &str, mut args: Vec<String>, name: &str) -> Result<(), ResError> {
        if self.root != Path::new("/") {
            args.insert(0, self.root.display().to_string());
            args.insert(0, "--root".into());
        }
        args.push(name.to_string());
        let argv: Vec<&str> = std::iter::once(tool).chain(args.iter().map(String::as_str)).collect();
        run_ok(&argv).await.map(drop)
    }
}

/// Parses `name:x:gid:members` lines into (name, gid, members).
fn group_lines(text: &str) -> impl Iterator<Item = (&str, u32, Vec<&str>)> {
    text.lines().filter_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        let gid = f.get(2)?.parse().ok()?;
        let members = f.get(3).map(|m| m.split(',').filter(|s| !s.is_empty()).collect()).unwrap_or_default();
        Some((f[0], gid, members))
    })
}

#[async_trait]
impl Accounts for ShadowTools {
    async fn user(&self, name: &str) -> Result<Option<UserInfo>, ResError> {
        let passwd = self.read("etc/passwd")?;
        let Some(f) = passwd.lines().map(|l| l.split(':').collect::<Vec<_>>()).find(|f| f.len() >= 7 && f[0] == name)
        else {
            return Ok(None);
        };
        let groups = self.read("etc/group")?;
        let supplementary =
            group_lines(&groups).filter(|(_, _, m)| m.contains(&name)).map(|(g, _, _)| g.to_string()).collect();
        Ok(Some(UserInfo {
            uid: f[2].parse().unwrap_or(0),
            gid: f[3].parse().unwrap_or(0),
            home: f[5].to_string(),
            shell: f[6].to_string(),
            groups: supplementary,
        }))
    }
    async fn group(&self, name: &str) -> Result<Option<u32>, ResError> {
        Ok(group_lines(&self.read("etc/group")?).find(|(g, _, _)| *g == name).map(|(_, gid, _)| gid))
    }
    async fn add_user(&self, name: &str, spec: &UserSpec) -> Result<(), ResError> {
        let mut args = Self::user_args(spec);
        args.push("-M".into());
        self.tool("useradd", args, name).await
    }
    async fn modify_user(&self, name: &str, spec: &UserSpec) -> Result<(), ResError> {
        self.tool("usermod", Self::user_args(spec), name).await
    }
    async fn delete_user(&self, name: &str) -> Result<(), ResError> {
        self.tool("userdel", Vec::new(), name).await
    }
    async fn add_group(&self, name: &str, gid: Option<u32>) -> Result<(), ResError> {
        let args = gid.map(|g| vec!["-g".to_string(), g.to_string()]).unwrap_or_default();
        self.tool("groupadd", args, name).await
    }
    async fn modify_group(&self, name: &str, gid: u32) -> Result<(), ResError> {
        self.tool("groupmod", vec!["-g".into(), gid.to_string()], name).await
    }
    async fn delete_group(&self, name: &str) -> Result<(), ResError> {
        self.tool("groupdel", Vec::new(), name).await
    }
    fn files(&self) -> Vec<PathBuf> {
        vec![self.root.join("etc/passwd"), self.root.join("etc/group")]
    }
}

/// In-memory accounts for tests.
#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakeAccounts {
    pub users: Mutex<BTreeMap<String, UserInfo>>,
    pub groups: Mutex<BTreeMap<String, u32>>,
}

#[cfg(any(test, feature = "fakes"))]
impl FakeAccounts {
    fn resolve_gid(&self, group: &str) -> Result<u32, ResError> {
        if let Ok(n) = group.parse() {
            return Ok(n);
        }
        self.groups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(group)
            .copied()
            .ok_or_else(|| ResError::new(format!("group '{group}' does not exist")))
    }
    fn apply(&self, info: &mut UserInfo, spec: &UserSpec) -> Result<(), ResError> {
        if let Some(uid) = spec.uid {
            info.uid = uid;
        }
        if let Some(g) = &spec.group {
            info.gid = self.resolve_gid(g)?;
        }
        if let Some(gs) = &spec.groups {
            for g in gs {
                self.resolve_gid(g)?;
            }
            info.groups = gs.iter().cloned().collect();
        }
        if let Some(h) = &spec.home {
            info.home = h.clone();
        }
        if let Some(s) = &spec.shell {
            info.shell = s.clone();
        }
        Ok(())
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl Accounts for FakeAccounts {
    async fn user(&self, name: &str) -> Result<Option<UserInfo>, ResError> {
        Ok(self.users.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned())
    }
    async fn group(&self, name: &str) -> Result<Option<u32>, ResError> {
        Ok(self.groups.lock().unwrap_or_else(|e| e.into_inner()).get(name).copied())
    }
    async fn add_user(&self, name: &str, spec: &UserSpec) -> Result<(), ResError> {
        let next = 1000 + self.users.lock().unwrap_or_else(|e| e.into_inner()).len() as u32;
        let mut info = UserInfo {
            uid: next,
            gid: next,
            home: format!("/home/{name}"),
            shell: "/bin/sh".into(),
            ..UserInfo::default()
        };
        self.apply(&mut info, spec)?;
        self.users.lock().unwrap_or_else(|e| e.into_inner()).insert(name.into(), info);
        Ok(())
    }
    async fn modify_user(&self, name: &str, spec: &UserSpec) -> Result<(), ResError> {
        let mut info = self.user(name).await?.ok_or_else(|| ResError::new(format!("user '{name}' does not exist")))?;
        self.apply(&mut info, spec)?;
        self.users.lock().unwrap_or_else(|e| e.into_inner()).insert(name.into(), info);
        Ok(())
    }
    async fn delete_user(&self, name: &str) -> Result<(), ResError> {
        self.users.lock().unwrap_or_else(|e| e.into_inner()).remove(name);
        Ok(())
    }
    async fn add_group(&self, name: &str, gid: Option<u32>) -> Result<(), ResError> {
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        let gid = gid.unwrap_or(2000 + groups.len() as u32);
        groups.insert(name.into(), gid);
        Ok(())
    }
    async fn modify_group(&self, name: &str, gid: u32) -> Result<(), ResError> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner()).insert(name.into(), gid);
        Ok(())
    }
    async fn delete_group(&self, name: &str) -> Result<(), ResError> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner()).remove(name);
        Ok(())
    }
    fn files(&self) -> Vec<PathBuf> {
        Vec::new()
    }
}
