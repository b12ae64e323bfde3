//! The Admin URL as the operator gives it: the Admin's base URL, `http(s)://HOST[:PORT]`
//! (a path prefix is allowed, for an Admin behind a proxy) — never the API's own path, to
//! which the client adds `/api/v1/client/…` itself. Checked where it comes in: the config
//! (file, `CMAUTOBUY_ADMIN_URL`, `--admin`), `register`, and the local save every other
//! path goes through ([`crate::registration::save_locally`]).

/// Why an Admin URL was refused, with the URL to write instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("[{code}] Admin 地址无效 {given:?}：{why_zh}；请写 {fix} — 客户端会自己加上 /api/v1/client / the Admin URL {given:?} {why}: write {fix} — the client adds /api/v1/client itself", code = Self::CODE)]
pub struct AdminUrlError {
    pub given: String,
    pub why: &'static str,
    pub why_zh: &'static str,
    /// What to write instead.
    pub fix: String,
}

impl AdminUrlError {
    /// The stable code of this refusal.
    pub const CODE: &'static str = "ADMIN_URL_INVALID";
}

/// Whether `given` is an Admin base URL (taken as given: a saved token is bound to the
/// URL exactly as it was saved), or why not.
pub fn check(given: &str) -> Result<(), AdminUrlError> {
    let s = given.trim();
    let refuse = |why: &'static str, why_zh: &'static str, fix: String| AdminUrlError {
        given: s.to_string(),
        why,
        why_zh,
        fix,
    };
    let lower = s.to_ascii_lowercase();
    let has_scheme = lower.starts_with("http://") || lower.starts_with("https://");
    if !has_scheme {
        // `127.0.0.1:18080`, `admin.example.com`, `localhost:8080` (which a URL parser
        // reads as the scheme `localhost`).
        let bare = s.split("://").last().unwrap_or(s);
        return Err(refuse(
            "has no http:// or https:// in front",
            "缺少 http:// 或 https://",
            format!("http://{}", base_of(bare)),
        ));
    }
    let url = reqwest::Url::parse(s).map_err(|_| {
        refuse(
            "is not a URL",
            "不是有效的网址",
            "http://HOST:PORT".to_string(),
        )
    })?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(refuse(
            "has no host",
            "缺少主机名",
            "http://HOST:PORT".to_string(),
        ));
    }
    let origin = url.origin().ascii_serialization();
    if !url.username().is_empty() || url.password().is_some() {
        // Not quoted back: what is in front of the `@` may be a password.
        return Err(AdminUrlError {
            given: format!(
                "{}://***@{}",
                url.scheme(),
                url.host_str().unwrap_or_default()
            ),
            ..refuse(
                "carries a user name or password (the token goes in `token`, never in the URL)",
                "网址中不能带用户名或密码（令牌请写在 token 中）",
                origin,
            )
        });
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(refuse(
            "has a query or a fragment",
            "网址不能带 ? 或 # 部分",
            format!("{origin}{}", url.path().trim_end_matches('/')),
        ));
    }
    let path = url.path().trim_end_matches('/');
    if let Some(i) = api_path_at(path) {
        return Err(refuse(
            "holds the API's own path",
            "包含了接口路径 /api/…",
            format!("{origin}{}", &path[..i]),
        ));
    }
    Ok(())
}

/// Where the API's path (`/api/v1`, `/api/v1/client`) starts in `path`. (`/api` alone
/// may be a proxy's prefix.)
fn api_path_at(path: &str) -> Option<usize> {
    let lower = path.to_ascii_lowercase();
    ["/api/v1/client", "/api/v1"].iter().find_map(|p| {
        lower
            .find(p)
            .filter(|&i| lower[i + p.len()..].is_empty() || lower[i + p.len()..].starts_with('/'))
    })
}

/// `HOST[:PORT]` of a bare address, without the API's path.
fn base_of(bare: &str) -> &str {
    let cut = bare.find(['/', '?', '#']).unwrap_or(bare.len());
    &bare[..cut]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_is_taken() {
        for given in [
            "http://127.0.0.1:18080",
            "http://127.0.0.1:18080/",
            " https://admin.example.com ",
            "https://proxy.example.com/cm-admin",
            "https://proxy.example.com/api",
            "http://in-process",
        ] {
            assert_eq!(check(given), Ok(()), "{given}");
        }
    }

    #[test]
    fn a_url_without_a_scheme_or_with_the_api_path_is_refused_with_the_fix() {
        for (given, fix) in [
            ("127.0.0.1:18080", "http://127.0.0.1:18080"),
            ("localhost:8080", "http://localhost:8080"),
            ("admin.example.com/api/v1", "http://admin.example.com"),
            ("http://127.0.0.1:18080/api/v1", "http://127.0.0.1:18080"),
            ("http://127.0.0.1:18080/api/v1/", "http://127.0.0.1:18080"),
            (
                "http://127.0.0.1:18080/api/v1/client",
                "http://127.0.0.1:18080",
            ),
            (
                "https://proxy.example.com/cm/api/v1",
                "https://proxy.example.com/cm",
            ),
            (
                "http://u:pw-secret@admin.example.com",
                "http://admin.example.com",
            ),
            ("http://admin.example.com/?x=1", "http://admin.example.com"),
            ("ftp://admin.example.com", "http://admin.example.com"),
        ] {
            let e = check(given).expect_err(given);
            assert_eq!(e.fix, fix, "{given}");
            let text = e.to_string();
            assert!(text.contains(AdminUrlError::CODE), "{text}");
            assert!(!text.contains("pw-secret"), "{text}");
            assert!(
                text.contains(&format!(
                    "write {fix} — the client adds /api/v1/client itself"
                )),
                "{text}"
            );
        }
    }
}
