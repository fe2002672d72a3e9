//! The browser package that the demo page imports, served at `/pkg/twoplane/`.
//!
//! The binary carries its own copy: `npm/twoplane/src/` and, when `scripts/build-wasm.sh` ran
//! before the build, `npm/twoplane/wasm/` are compiled in (`build.rs` says from where: a
//! packaged crate carries them in `browser/`, and reruns the build when they change), so an installed `twoplane serve --demo` needs nothing from the source tree.
//! `--assets DIR` serves a directory instead, for working on the package without rebuilding.

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::extract::Path as UrlPath;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// The package as it was when this binary was built. Only the files a browser loads.
#[derive(rust_embed::Embed)]
#[folder = "$TWOPLANE_BROWSER_PACKAGE/"]
#[include = "package.json"]
#[include = "src/*"]
#[include = "wasm/*"]
struct Embedded;

/// Where `/pkg/twoplane/` is served from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PackageSource {
    /// The copy compiled into the binary (the default).
    Embedded,
    /// A directory laid out like `npm/twoplane` (`--assets DIR`).
    Dir(PathBuf),
}

impl PackageSource {
    /// Says plainly when the page cannot work: the browser would otherwise fail in its
    /// console, where nobody looks.
    pub fn problem(&self) -> Option<String> {
        match self {
            PackageSource::Embedded if Embedded::get("src/index.browser.js").is_none() => {
                Some("this binary was built without the browser package: pass --assets DIR".into())
            }
            PackageSource::Embedded if !has_embedded_wasm() => Some(
                "this binary was built before the wasm build: run scripts/build-wasm.sh and rebuild, or pass --assets DIR"
                    .into(),
            ),
            PackageSource::Embedded => None,
            PackageSource::Dir(dir) => dir_problem(dir),
        }
    }

    /// The routes under `/pkg/twoplane`, to nest there.
    pub fn router<S: Clone + Send + Sync + 'static>(&self) -> Router<S> {
        match self {
            PackageSource::Embedded => Router::new().route("/{*path}", get(embedded)),
            PackageSource::Dir(dir) => Router::new().fallback_service(tower_http::services::ServeDir::new(dir)),
        }
    }
}

fn has_embedded_wasm() -> bool {
    Embedded::iter().any(|name| name.starts_with("wasm/") && name.ends_with(".wasm"))
}

fn dir_problem(dir: &Path) -> Option<String> {
    if !dir.join("src/index.browser.js").is_file() {
        Some(format!("{} holds no browser package (src/index.browser.js is missing)", dir.display()))
    } else if !dir.join("wasm").is_dir() {
        Some(format!("{} has no wasm build: run scripts/build-wasm.sh", dir.display()))
    } else {
        None
    }
}

async fn embedded(UrlPath(path): UrlPath<String>) -> Response {
    let Some(file) = Embedded::get(&path) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mime = file.metadata.mimetype();
    // Module scripts need a JavaScript type; a `.wasm` needs `application/wasm` for streaming
    // compilation. mime_guess knows both.
    let content_type = if mime.starts_with("text/") || mime.ends_with("javascript") || mime.ends_with("json") {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_owned()
    };
    (
        [(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache".to_owned())],
        Body::from(file.data.into_owned()),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binary_carries_the_package_entry() {
        // src/ is in the repository, so every build embeds it whatever else was built.
        assert!(Embedded::get("src/index.browser.js").is_some());
        assert!(Embedded::get("src/facade.js").is_some());
        assert!(Embedded::iter()
            .all(|name| name == "package.json" || name.starts_with("src/") || name.starts_with("wasm/")));
    }

    #[test]
    fn a_directory_without_the_package_is_named_as_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let problem = PackageSource::Dir(dir.path().to_owned()).problem().unwrap();
        assert!(problem.contains("src/index.browser.js"), "{problem}");
    }
}
