//! A small safe wrapper over libaugeas, loaded at run time (`dlopen`) so the `tend` binary
//! needs the library only on machines that use the `augeas` kind: elsewhere that kind says
//! the library is missing and every other kind works. One [`Augeas`] is one handle of the C
//! library, used by one thread and closed on drop.

#![allow(unsafe_code, reason = "the foreign calls into libaugeas; each says why it is sound")]

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::ptr::NonNull;
use std::sync::OnceLock;

/// `aug_init` flags (augeas.h).
pub const NO_LOAD: c_uint = 1 << 5;
pub const NO_MODL_AUTOLOAD: c_uint = 1 << 6;
pub const NO_ERR_CLOSE: c_uint = 1 << 8;

type Init = unsafe extern "C" fn(*const c_char, *const c_char, c_uint) -> *mut c_void;
type Get = unsafe extern "C" fn(*const c_void, *const c_char, *mut *const c_char) -> c_int;
type Set = unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char) -> c_int;
type Act = unsafe extern "C" fn(*mut c_void) -> c_int;
type LoadFile = unsafe extern "C" fn(*mut c_void, *const c_char) -> c_int;
type Close = unsafe extern "C" fn(*mut c_void);
type Message = unsafe extern "C" fn(*mut c_void) -> *const c_char;

/// The library's entry points, resolved once; the library stays loaded for the process.
struct Api {
    _lib: libloading::Library,
    init: Init,
    get: Get,
    set: Set,
    load: Act,
    load_file: LoadFile,
    save: Act,
    close: Close,
    error: Act,
    error_message: Message,
    error_minor_message: Message,
    error_details: Message,
}

/// The shared library names tried, newest ABI first.
const LIBRARIES: [&str; 2] = ["libaugeas.so.0", "libaugeas.so"];

fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(load_api).as_ref().map_err(Clone::clone)
}

fn load_api() -> Result<Api, String> {
    let mut tried = Vec::new();
    for name in LIBRARIES {
        // SAFETY: loading libaugeas runs only its ELF constructors, which set nothing up
        // beyond the library's own globals.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => return resolve(lib).map_err(|e| format!("{name}: {e}")),
            Err(e) => tried.push(e.to_string()),
        }
    }
    Err(format!("libaugeas is not installed (Debian: apt install libaugeas0 augeas-lenses): {}", tried.join("; ")))
}

fn resolve(lib: libloading::Library) -> Result<Api, libloading::Error> {
    // SAFETY: each symbol is read with the C signature augeas.h declares for it, and the
    // pointers are used only while `_lib` (moved into the same `Api`) keeps it loaded.
    unsafe {
        Ok(Api {
            init: *lib.get::<Init>(b"aug_init\0")?,
            get: *lib.get::<Get>(b"aug_get\0")?,
            set: *lib.get::<Set>(b"aug_set\0")?,
            load: *lib.get::<Act>(b"aug_load\0")?,
            load_file: *lib.get::<LoadFile>(b"aug_load_file\0")?,
            save: *lib.get::<Act>(b"aug_save\0")?,
            close: *lib.get::<Close>(b"aug_close\0")?,
            error: *lib.get::<Act>(b"aug_error\0")?,
            error_message: *lib.get::<Message>(b"aug_error_message\0")?,
            error_minor_message: *lib.get::<Message>(b"aug_error_minor_message\0")?,
            error_details: *lib.get::<Message>(b"aug_error_details\0")?,
            _lib: lib,
        })
    }
}

/// Whether libaugeas can be loaded here.
pub fn available() -> Result<(), String> {
    api().map(|_| ())
}

/// One libaugeas handle. Not `Send`: the library's handles are not thread-safe.
pub struct Augeas {
    api: &'static Api,
    handle: NonNull<c_void>,
}

fn cstring(what: &str, text: &str) -> Result<CString, String> {
    CString::new(text).map_err(|_| format!("the {what} {text:?} holds a NUL byte"))
}

/// Copies a C string the library owns (NULL: none).
///
/// # Safety
/// `ptr` is NULL or points at a NUL-terminated string that stays valid during the call.
unsafe fn owned(ptr: *const c_char) -> Option<String> {
    // SAFETY: the caller's contract.
    (!ptr.is_null()).then(|| unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned())
}

impl Augeas {
    /// A handle on the file system under `root` with `flags` (`NO_ERR_CLOSE` is added, so a
    /// failed start can say why).
    pub fn open(root: &str, flags: c_uint) -> Result<Augeas, String> {
        let api = api()?;
        let root = cstring("root", root)?;
        // SAFETY: `root` is a valid C string for the call; a NULL load path means the
        // library's default lens directories.
        let raw = unsafe { (api.init)(root.as_ptr(), std::ptr::null(), flags | NO_ERR_CLOSE) };
        let handle = NonNull::new(raw).ok_or("libaugeas could not start (out of memory)")?;
        let aug = Augeas { api, handle };
        aug.check("start")?;
        Ok(aug)
    }

    /// The library's last error, if any, as one line.
    fn last_error(&self) -> Option<String> {
        let h = self.handle.as_ptr();
        // SAFETY: `h` is a live handle; the messages are owned by it and copied at once.
        unsafe {
            if (self.api.error)(h) == 0 {
                return None;
            }
            let parts = [
                owned((self.api.error_message)(h)),
                owned((self.api.error_minor_message)(h)),
                owned((self.api.error_details)(h)),
            ];
            Some(parts.into_iter().flatten().filter(|p| !p.is_empty()).collect::<Vec<_>>().join(": "))
        }
    }

    fn check(&self, doing: &str) -> Result<(), String> {
        match self.last_error() {
            Some(e) => Err(format!("augeas could not {doing}: {e}")),
            None => Ok(()),
        }
    }

    /// A call's return code as a result: the library's error when it has one, else `fallback`.
    fn done(&self, rc: c_int, doing: &str, fallback: impl FnOnce() -> String) -> Result<(), String> {
        if rc < 0 {
            self.check(doing)?;
            return Err(fallback());
        }
        Ok(())
    }

    /// The value at `path`: `Ok(None)` when no node matches (or the node has no value),
    /// an error when several do.
    pub fn get(&self, path: &str) -> Result<Option<String>, String> {
        let p = cstring("path", path)?;
        let mut value: *const c_char = std::ptr::null();
        // SAFETY: live handle, valid C string; `value` receives a pointer owned by the tree,
        // copied before the next call on this handle.
        let n = unsafe { (self.api.get)(self.handle.as_ptr(), p.as_ptr(), &mut value) };
        match n {
            0 => Ok(None),
            // SAFETY: on success `value` is NULL or a string owned by the tree.
            1 => Ok(unsafe { owned(value) }),
            _ => match self.last_error() {
                Some(e) if !e.contains("Too many matches") => Err(format!("augeas could not read {path}: {e}")),
                _ => Err(format!("{path} matches more than one node; name one (for example with [1] or [last()])")),
            },
        }
    }

    /// Sets the value at `path`, creating the node (and its parents) when missing.
    pub fn set(&mut self, path: &str, value: &str) -> Result<(), String> {
        let p = cstring("path", path)?;
        let v = cstring("value", value)?;
        // SAFETY: live handle, valid C strings; the library copies them.
        let rc = unsafe { (self.api.set)(self.handle.as_ptr(), p.as_ptr(), v.as_ptr()) };
        self.done(rc, &format!("set {path}"), || {
            format!("augeas could not set {path} (does it match more than one node?)")
        })
    }

    /// Loads every file the load settings under `/augeas/load` name.
    pub fn load(&mut self) -> Result<(), String> {
        // SAFETY: live handle.
        let rc = unsafe { (self.api.load)(self.handle.as_ptr()) };
        self.done(rc, "load", || "augeas could not load".into())
    }

    /// Loads one file with the lens the library's autoload settings give it.
    pub fn load_file(&mut self, file: &str) -> Result<(), String> {
        let f = cstring("file", file)?;
        // SAFETY: live handle, valid C string.
        let rc = unsafe { (self.api.load_file)(self.handle.as_ptr(), f.as_ptr()) };
        if rc < 0 {
            let why = self.last_error().map_or_else(String::new, |e| format!(" ({e})"));
            return Err(format!("augeas has no lens for {file}{why}: name one with `lens`"));
        }
        Ok(())
    }

    /// Writes every changed file back (each through a new file renamed into place).
    pub fn save(&mut self) -> Result<(), String> {
        // SAFETY: live handle.
        let rc = unsafe { (self.api.save)(self.handle.as_ptr()) };
        self.done(rc, "save", || "augeas could not save".into())
    }
}

impl Drop for Augeas {
    fn drop(&mut self) {
        // SAFETY: the handle is live and closed once, here.
        unsafe { (self.api.close)(self.handle.as_ptr()) }
    }
}
