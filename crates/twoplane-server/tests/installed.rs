//! `twoplane serve --demo` as an installed binary: copied out of the build tree and run from an
//! empty directory, it still serves the chat page and the browser package it imports, byte for
//! byte what `npm/twoplane` held when it was built. Needs the wasm build to exist before the
//! binary is compiled (`scripts/test-server.sh` runs `scripts/build-wasm.sh` first).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_twoplane");

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One GET over a fresh connection: status line, headers (lower-cased names) and body bytes.
fn get(addr: &str, path: &str) -> (String, Vec<(String, String)>, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a complete response head");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect::<Vec<_>>();
    let mut body = raw[split + 4..].to_vec();
    if headers.iter().any(|(k, v)| k == "transfer-encoding" && v == "chunked") {
        body = dechunk(&body);
    }
    (status, headers, body)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = data.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&data[..eol]).unwrap().trim(), 16).unwrap();
        data = &data[eol + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
}

/// Whether `unshare -m` can mount over `npm/` here (it needs root), checked by doing it once.
fn hiding_works(package: &Path) -> bool {
    let probe = r#"mount -t tmpfs none "$1" && test ! -e "$1/twoplane""#;
    Command::new("unshare")
        .args(["-m", "sh", "-c", probe, "sh"])
        .arg(package.parent().unwrap())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str())
}

#[test]
fn an_installed_binary_serves_the_demo_page_and_the_package_it_was_built_with() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../npm/twoplane");
    let wasm = package.join("wasm/twoplane_wasm_bg.wasm");
    assert!(wasm.is_file(), "{} is missing: run scripts/build-wasm.sh before building the binary", wasm.display());

    // "Install" the binary: a copy in a directory of its own, run from another empty one, with
    // nothing of the source tree reachable through its path or its working directory.
    let prefix = tempfile::tempdir().unwrap();
    let bin = prefix.path().join("twoplane");
    std::fs::copy(BIN, &bin).unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let serve = ["serve", "--demo", "--listen", "127.0.0.1:0", "--db", "demo.db"];
    // The old binary read the package from the source tree's absolute path, which still exists
    // here; a private mount namespace with an empty tmpfs over `npm/` hides it from the server.
    let mut command = if hiding_works(&package) {
        let mut c = Command::new("unshare");
        c.args(["-m", "sh", "-c", r#"mount -t tmpfs none "$1" && shift && exec "$@""#, "sh"])
            .arg(package.parent().unwrap())
            .arg(&bin)
            .args(serve);
        c
    } else {
        assert!(
            std::env::var_os("TWOPLANE_REQUIRE_SERVICES").is_none(),
            "cannot hide the source tree from the server (unshare -m needs root): the test would prove nothing"
        );
        let mut c = Command::new(&bin);
        c.args(serve);
        c
    };
    let mut child = command
        .current_dir(cwd.path())
        .env("RUST_LOG", "info")
        .env_remove("CARGO_MANIFEST_DIR")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let server = Server(child);
    let mut log = Vec::new();
    let addr = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            log.push(line.clone());
            line.split("listening addr=").nth(1).map(|rest| rest.split_whitespace().next().unwrap().to_owned())
        })
        .expect("the server logs its address");
    assert!(!log.iter().any(|l| l.contains("will not load")), "the server warned about its assets: {log:#?}");

    let (status, headers, page) = get(&addr, "/");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert!(header(&headers, "content-type").starts_with("text/html"), "{headers:?}");
    let page = String::from_utf8(page).unwrap();
    assert!(page.contains("app.js"), "{page}");

    // The modules the page imports, and the wasm the package loads: the very bytes of the tree.
    for (path, mime) in [
        ("src/index.browser.js", "javascript"),
        ("src/facade.js", "javascript"),
        ("wasm/twoplane_wasm.js", "javascript"),
        ("wasm/twoplane_wasm_bg.wasm", "application/wasm"),
    ] {
        let (status, headers, body) = get(&addr, &format!("/pkg/twoplane/{path}"));
        assert!(status.starts_with("HTTP/1.1 200"), "{path}: {status}");
        assert!(header(&headers, "content-type").contains(mime), "{path}: {headers:?}");
        assert_eq!(body, std::fs::read(package.join(path)).unwrap(), "{path} differs from the tree");
    }
    let (status, _, _) = get(&addr, "/pkg/twoplane/src/no-such-module.js");
    assert!(status.starts_with("HTTP/1.1 404"), "{status}");
    let (status, _, _) = get(&addr, "/pkg/twoplane/../Cargo.toml");
    assert!(!status.starts_with("HTTP/1.1 200"), "{status}");
    drop(server);
}
