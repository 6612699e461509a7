//! `kwctl scaffold artifacthub`, re-derived without kwctl: the rules it
//! applies to metadata.yml and the file it writes, as read in kwctl's source
//! (kubewarden monorepo: `crates/kwctl/src/scaffold/artifacthub.rs`,
//! `crates/policy-evaluator/src/policy_artifacthub.rs`, kwctl 1.36).
//! artifacthub-pkg.yml must be byte for byte what kwctl writes (except
//! `createdAt`, which `make artifacthub` then sets to the release's date in
//! CHANGELOG.md, checked by release.rs), so `make artifacthub` cannot fail
//! or change it on a machine that has kwctl, and a regression shows on one
//! that has not.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::root;
use serde::{Deserialize, Serialize};

/// What kwctl puts before the YAML (the trailing space is kwctl's).
const HEADER: &str = "# Kubewarden Artifacthub Package config
#
# Use this config to submit the policy to https://artifacthub.io.
#
# This config can be saved to its default location with:
#   kwctl scaffold artifacthub > artifacthub-pkg.yml \n";

#[derive(Deserialize)]
struct Metadata {
    rules: Vec<Rule>,
    mutating: bool,
    #[serde(default, rename = "contextAwareResources")]
    context_aware_resources: BTreeSet<ContextAwareResource>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    api_groups: Vec<String>,
    api_versions: Vec<String>,
    resources: Vec<String>,
    operations: Vec<String>,
}

#[derive(Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
struct ContextAwareResource {
    api_version: String,
    kind: String,
}

/// kwctl's `ArtifactHubPkg`, fields in its order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Package {
    version: String,
    name: String,
    display_name: String,
    created_at: String,
    description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    license: Option<String>,
    #[serde(rename = "homeURL", skip_serializing_if = "Option::is_none")]
    home_url: Option<String>,
    containers_images: Vec<NamedImage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    keywords: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    links: Option<Vec<Link>>,
    install: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    maintainers: Option<Vec<Maintainer>>,
    provider: Provider,
    recommendations: Vec<Recommendation>,
    annotations: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct NamedImage {
    name: String,
    image: String,
}

#[derive(Serialize)]
struct Link {
    name: String,
    url: String,
}

#[derive(Serialize, Debug, PartialEq)]
struct Maintainer {
    name: String,
    email: String,
}

#[derive(Serialize)]
struct Provider {
    name: String,
}

#[derive(Serialize)]
struct Recommendation {
    url: String,
}

const AUTHOR: &str = "io.kubewarden.policy.author";

fn missing(key: &str) -> String {
    format!("policy metadata must specify \"{key}\" in annotations")
}

fn malformed_url(key: &str, why: &str) -> String {
    format!("annotation \"{key:?}\" in policy metadata must be a well formed URL: {why:?}")
}

/// The text `kwctl scaffold artifacthub` writes for these inputs, or its
/// error message.
fn scaffold(metadata: &str, questions: Option<&str>, created_at: &str) -> Result<String, String> {
    let m: Metadata =
        serde_yaml::from_str(metadata).map_err(|e| format!("Error unmarshalling metadata {e}"))?;
    let ann = m.annotations.filter(|a| !a.is_empty()).ok_or(
        "no annotations in policy metadata. policy metadata must specify annotations".to_string(),
    )?;
    let get = |key: &str| ann.get(key).cloned();
    let required = |key: &str| get(key).ok_or_else(|| missing(key));

    let version = required("io.kubewarden.policy.version")?;
    check_semver(&version).map_err(|e| format!("policy version must be in semver: {e}"))?;
    if questions == Some("") {
        return Err("questions-ui content cannot be empty".into());
    }
    let name = required("io.kubewarden.policy.title")?;
    let display_name = required("io.artifacthub.displayName")?;
    let description = required("io.kubewarden.policy.description")?;
    let home_url = match get("io.kubewarden.policy.url") {
        Some(url) => {
            Some(normalized_url(&url).map_err(|e| malformed_url("io.kubewarden.policy.url", e))?)
        }
        None => None,
    };
    let oci = required("io.kubewarden.policy.ociUrl")?;
    let image = oci_reference(&format!("{oci}:v{version}"))
        .map_err(|e| malformed_url("io.kubewarden.policy.ociUrl", e))?;
    let keywords = match get("io.artifacthub.keywords") {
        Some(csv) => {
            let items: Vec<String> = csv
                .split(',')
                .map(|k| k.trim_matches(' ').to_string())
                .collect();
            if items.iter().any(String::is_empty) {
                return Err("annotation \"io.artifacthub.keywords\" in policy metadata is malformed, must be csv values".into());
            }
            Some(items)
        }
        None => None,
    };
    let links = match get("io.kubewarden.policy.source") {
        Some(url) => {
            let source = normalized_url(&url)
                .map_err(|e| malformed_url("io.kubewarden.policy.source", e))?;
            let mut links = Vec::new();
            if url_host(&source) == Some("github.com") {
                let release = get("com.github.release.tag")
                    .map_or_else(|| format!("v{version}"), |tag| form_urlencoded(&tag));
                links.push(Link {
                    name: "policy".into(),
                    url: format!("{source}/releases/download/{release}/policy.wasm"),
                });
            }
            links.push(Link {
                name: "source".into(),
                url: source,
            });
            Some(links)
        }
        None => None,
    };
    let install = format!(
        "The policy can be obtained using [kwctl](https://docs.kubewarden.io/howtos/install-kwctl):\n\
         ```console\nkwctl pull {image}\n```\n\
         Then, generate the policy manifest and tune it to your liking. For example:\n\
         ```console\nkwctl scaffold manifest -t ClusterAdmissionPolicy registry://{image}\n```\n"
    );
    let maintainers = match get(AUTHOR) {
        Some(author) => Some(maintainers(&author)?),
        None => None,
    };

    let mut annotations = BTreeMap::new();
    if !m.context_aware_resources.is_empty() {
        annotations.insert(
            "kubewarden/contextAwareResources".into(),
            serde_yaml::to_string(&m.context_aware_resources).unwrap(),
        );
    }
    if let Some(hidden) = get("io.kubewarden.hidden-ui") {
        annotations.insert("kubewarden/hidden-ui".into(), hidden);
    }
    annotations.insert("kubewarden/mutation".into(), m.mutating.to_string());
    if let Some(questions) = questions {
        annotations.insert("kubewarden/questions-ui".into(), questions.to_string());
    }
    if let Some(resources) = get("io.artifacthub.resources") {
        annotations.insert("kubewarden/resources".into(), resources);
    }
    annotations.insert(
        "kubewarden/rules".into(),
        serde_yaml::to_string(&m.rules).unwrap(),
    );

    let package = Package {
        version,
        name,
        display_name,
        created_at: created_at.to_string(),
        description,
        license: get("io.kubewarden.policy.license"),
        home_url,
        containers_images: vec![NamedImage {
            name: "policy".into(),
            image,
        }],
        keywords,
        links,
        install,
        maintainers,
        provider: Provider {
            name: "kubewarden".into(),
        },
        recommendations: vec![Recommendation {
            url: "https://artifacthub.io/packages/helm/kubewarden/kubewarden-controller".into(),
        }],
        annotations,
    };
    Ok(format!(
        "{HEADER}{}",
        serde_yaml::to_string(&package).unwrap()
    ))
}

/// SemVer 2.0.0: `MAJOR.MINOR.PATCH`, then `-pre` and `+build` identifiers.
fn check_semver(v: &str) -> Result<(), &'static str> {
    let (v, build) = v.split_once('+').map_or((v, None), |(a, b)| (a, Some(b)));
    let (core, pre) = v.split_once('-').map_or((v, None), |(a, b)| (a, Some(b)));
    let numeric = |s: &str| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
    };
    let ident =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() != 3 || !parts.iter().all(|p| numeric(p)) {
        return Err("expected MAJOR.MINOR.PATCH without leading zeros");
    }
    if let Some(pre) = pre {
        let ok = pre
            .split('.')
            .all(|i| ident(i) && (!i.bytes().all(|b| b.is_ascii_digit()) || numeric(i)));
        if !ok {
            return Err("invalid pre-release identifier");
        }
    }
    if build.is_some_and(|b| !b.split('.').all(ident)) {
        return Err("invalid build metadata");
    }
    Ok(())
}

/// An absolute http(s) URL as the `url` crate prints it: a bare host gets
/// its `/` path. (kwctl accepts any scheme; this project only uses https.)
fn normalized_url(url: &str) -> Result<String, &'static str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or("relative URL without a base")?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err("empty host");
    }
    Ok(if rest.len() == host.len() {
        format!("{url}/")
    } else {
        url.to_string()
    })
}

fn url_host(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    rest.split(['/', '?', '#', ':']).next()
}

/// `form_urlencoded::byte_serialize`: unreserved bytes stay, space is `+`.
fn form_urlencoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                (b as char).to_string()
            }
            b' ' => "+".into(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An OCI reference `registry/repository:tag` with a registry host, a
/// lowercase repository and exactly one tag (the one kwctl appends).
fn oci_reference(reference: &str) -> Result<String, &'static str> {
    if reference.contains('@') {
        return Err("invalid reference format");
    }
    let (name, tag) = reference
        .rsplit_once(':')
        .ok_or("invalid reference format")?;
    let (registry, repository) = name.split_once('/').ok_or("invalid reference format")?;
    let registry_like = registry.contains('.') || registry.contains(':') || registry == "localhost";
    let component = |c: &str| {
        !c.is_empty()
            && c.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
            && c.as_bytes()[0].is_ascii_alphanumeric()
    };
    if !registry_like || !repository.split('/').all(component) {
        return Err("repository name must be canonical and lowercase");
    }
    if tag.is_empty()
        || tag.len() > 128
        || !tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    {
        return Err("invalid tag format");
    }
    Ok(reference.to_string())
}

/// `name <email>` items separated by commas (kwctl parses an RFC 5322
/// address list: empty items are dropped, at least one address is needed).
fn maintainers(author: &str) -> Result<Vec<Maintainer>, String> {
    let csv = || {
        format!(
            "annotation \"{AUTHOR}\" in policy metadata is malformed, must be csv values of \"name <email>\""
        )
    };
    let mut found = Vec::new();
    for item in author.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, rest) = item.split_once('<').ok_or_else(csv)?;
        let email = rest.strip_suffix('>').ok_or_else(csv)?;
        let name = name.trim();
        let valid = match email.split_once('@') {
            Some((local, domain)) => {
                !local.is_empty()
                    && !domain.is_empty()
                    && !domain.contains('@')
                    && !email.contains(char::is_whitespace)
                    && !name.contains(['<', '>', '@'])
            }
            None => false,
        };
        if !valid {
            return Err(format!(
                "annotation \"{AUTHOR:?}\" in policy metadata must be a well formed email: \"{email}\""
            ));
        }
        found.push(Maintainer {
            name: name.to_string(),
            email: email.to_string(),
        });
    }
    if found.is_empty() {
        return Err(csv());
    }
    Ok(found)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `createdAt` as kwctl writes it: RFC 3339 in UTC with a `Z`.
fn created_at(package: &str) -> String {
    let line = package
        .lines()
        .find_map(|l| l.strip_prefix("createdAt: "))
        .expect("createdAt");
    let b = line.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    assert!(
        digits(0..4)
            && b[4] == b'-'
            && digits(5..7)
            && b[7] == b'-'
            && digits(8..10)
            && b[10] == b'T'
            && digits(11..13)
            && b[13] == b':'
            && digits(14..16)
            && b[16] == b':'
            && digits(17..19)
            && line.ends_with('Z'),
        "createdAt {line} is not RFC 3339 UTC"
    );
    line.to_string()
}

/// `package` with its `install` text replaced by `install`, as `make
/// artifacthub` does after kwctl.
fn with_install(package: &str, install: &str) -> String {
    let mut out = String::new();
    let mut skip = false;
    for line in package.lines() {
        if skip && line.starts_with("  ") {
            continue;
        }
        skip = false;
        out.push_str(line);
        out.push('\n');
        if line == "install: |" {
            for text in install.lines() {
                if !text.is_empty() {
                    out.push_str("  ");
                    out.push_str(text);
                }
                out.push('\n');
            }
            skip = true;
        }
    }
    out
}

/// The install text is the README's path (the dedicated PolicyServer, its
/// RBAC, the dry run first), not kwctl's default, whose scaffold cannot
/// read the cluster, and names the settings the policy requires.
#[test]
fn the_install_text_gives_a_policy_that_works() {
    let install = read("artifacthub-install.md");
    for needed in [
        "examples/policy-server.yaml",
        "examples/rbac.yaml",
        "examples/cluster-admission-policy-monitor.yaml",
        "examples/cluster-admission-policy.yaml",
        "runtimeClassName",
        "policyServerServiceAccount",
    ] {
        assert!(
            install.contains(needed),
            "artifacthub-install.md lacks {needed}"
        );
    }
    assert!(read("artifacthub-pkg.yml").contains("examples/cluster-admission-policy-monitor.yaml"));
}

#[test]
fn the_committed_package_is_what_kwctl_scaffolds() {
    let package = read("artifacthub-pkg.yml");
    let scaffolded = scaffold(
        &read("metadata.yml"),
        Some(&read("questions-ui.yml")),
        &created_at(&package),
    )
    .unwrap_or_else(|e| panic!("kwctl scaffold artifacthub would fail: {e}"));
    let expected = with_install(&scaffolded, &read("artifacthub-install.md"));
    assert!(
        package == expected,
        "artifacthub-pkg.yml differs from what `make artifacthub` writes; expected:\n{expected}"
    );
}

#[test]
fn the_makefile_scaffolds_without_deprecated_flags() {
    let makefile = read("Makefile");
    let recipe = makefile
        .lines()
        .skip_while(|l| !l.starts_with("artifacthub:"))
        .take_while(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(recipe.contains("scaffold artifacthub"), "{recipe}");
    assert!(
        !recipe.contains("--version"),
        "kwctl 1.36 takes the version from metadata.yml"
    );
}

/// Each rule refuses what kwctl refuses, with kwctl's message.
#[test]
fn scaffold_refuses_what_kwctl_refuses() {
    let metadata = read("metadata.yml");
    let questions = read("questions-ui.yml");
    let with = |key: &str, value: Option<&str>| -> String {
        let mut out: Vec<String> = metadata
            .lines()
            .filter(|l| !l.trim_start().starts_with(&format!("{key}:")))
            .map(str::to_string)
            .collect();
        if let Some(value) = value {
            out.push(format!("  {key}: {value}"));
        }
        out.join("\n")
    };
    let cases: Vec<(String, Option<&str>, &str)> = vec![
        (
            with(AUTHOR, Some("kata-runtime-policy developers")),
            Some(&questions),
            "must be csv values of \"name <email>\"",
        ),
        (
            with(
                AUTHOR,
                Some("Foo missing@chevrons.com, Bar <bar@example.com>"),
            ),
            Some(&questions),
            "must be csv values of \"name <email>\"",
        ),
        (
            with(AUTHOR, Some("Bar <no-at-sign>")),
            Some(&questions),
            "must be a well formed email",
        ),
        (
            with(AUTHOR, Some("\"\"")),
            Some(&questions),
            "must be csv values of \"name <email>\"",
        ),
        (
            with("io.kubewarden.policy.version", Some("v0.1.0")),
            Some(&questions),
            "policy version must be in semver",
        ),
        (
            with("io.kubewarden.policy.version", Some("'1.0'")),
            Some(&questions),
            "policy version must be in semver",
        ),
        (
            with("io.kubewarden.policy.version", Some("01.0.0")),
            Some(&questions),
            "policy version must be in semver",
        ),
        (
            with("io.kubewarden.policy.version", None),
            Some(&questions),
            "must specify \"io.kubewarden.policy.version\"",
        ),
        (
            with("io.kubewarden.policy.ociUrl", None),
            Some(&questions),
            "must specify \"io.kubewarden.policy.ociUrl\"",
        ),
        (
            with("io.kubewarden.policy.ociUrl", Some("ghcr.io/org/policy:v1")),
            Some(&questions),
            "\"\"io.kubewarden.policy.ociUrl\"\" in policy metadata must be a well formed URL",
        ),
        (
            with("io.kubewarden.policy.ociUrl", Some("ghcr.io/Org/policy")),
            Some(&questions),
            "must be a well formed URL",
        ),
        (
            with("io.kubewarden.policy.title", None),
            Some(&questions),
            "must specify \"io.kubewarden.policy.title\"",
        ),
        (
            with("io.artifacthub.displayName", None),
            Some(&questions),
            "must specify \"io.artifacthub.displayName\"",
        ),
        (
            with("io.kubewarden.policy.description", None),
            Some(&questions),
            "must specify \"io.kubewarden.policy.description\"",
        ),
        (
            with("io.artifacthub.keywords", Some("kata,,sandbox")),
            Some(&questions),
            "\"io.artifacthub.keywords\" in policy metadata is malformed, must be csv values",
        ),
        (
            with("io.artifacthub.keywords", Some("kata, sandbox,")),
            Some(&questions),
            "must be csv values",
        ),
        (
            with("io.kubewarden.policy.source", Some("github.com/x/y")),
            Some(&questions),
            "must be a well formed URL: \"relative URL without a base\"",
        ),
        (
            with("io.kubewarden.policy.url", Some("not a url")),
            Some(&questions),
            "must be a well formed URL",
        ),
        (
            metadata.clone(),
            Some(""),
            "questions-ui content cannot be empty",
        ),
        (
            metadata.replace("mutating: true\n", ""),
            Some(&questions),
            "Error unmarshalling metadata",
        ),
    ];
    for (meta, questions, expected) in cases {
        let err = scaffold(&meta, questions, "1970-01-01T00:00:00Z").expect_err(expected);
        assert!(err.contains(expected), "{err} (expected {expected})");
    }
    let no_annotations: String = metadata
        .lines()
        .take_while(|l| !l.starts_with("annotations:"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        scaffold(&no_annotations, None, "x")
            .unwrap_err()
            .contains("no annotations")
    );
}

/// And accepts what kwctl accepts.
#[test]
fn authors_are_read_like_kwctl() {
    let one = |name: &str, email: &str| Maintainer {
        name: name.into(),
        email: email.into(),
    };
    assert_eq!(
        maintainers("Tux Tuxedo <tux@example.com>, Pidgin <pidgin@example.com>").unwrap(),
        vec![
            one("Tux Tuxedo", "tux@example.com"),
            one("Pidgin", "pidgin@example.com")
        ]
    );
    assert_eq!(
        maintainers("Foo <foo@example.com>,,Bar <bar@example.com>").unwrap(),
        vec![one("Foo", "foo@example.com"), one("Bar", "bar@example.com")]
    );
    assert_eq!(
        maintainers("<foo@example.com>").unwrap(),
        vec![one("", "foo@example.com")]
    );
    for ok in [
        "0.1.0",
        "1.0.0-rc1",
        "1.0.0+build",
        "1.2.3-alpha.1+sha.5114f85",
    ] {
        assert_eq!(check_semver(ok), Ok(()), "{ok}");
    }
    assert_eq!(
        normalized_url("https://github.com").unwrap(),
        "https://github.com/"
    );
    assert_eq!(form_urlencoded("SomePolicy/v0.2.1"), "SomePolicy%2Fv0.2.1");
    let metadata = read("metadata.yml");
    let tagged = format!("{metadata}\n  com.github.release.tag: policy/v0.1.0\n");
    let package = scaffold(&tagged, None, "1970-01-01T00:00:00Z").unwrap();
    assert!(
        package.contains("/releases/download/policy%2Fv0.1.0/policy.wasm"),
        "{package}"
    );
}
