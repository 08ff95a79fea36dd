//! Release manifests (one JSON file per channel; docs/releases.md), versions and channels.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Stable,
    Preview,
}

impl Channel {
    pub fn parse(s: &str) -> Option<Channel> {
        match s.trim() {
            "stable" => Some(Channel::Stable),
            "preview" => Some(Channel::Preview),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Stable => "stable",
            Channel::Preview => "preview",
        }
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a manifest, or its entry for this machine, cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("the release manifest is not valid: {0}")]
    Invalid(serde_json::Error),
    #[error("the release manifest names version {0:?}, which is not a herdr version")]
    BadVersion(String),
    #[error("the {want} manifest says it is for channel {said:?}")]
    WrongChannel { want: Channel, said: String },
    #[error("herdr {version} has no build for {platform} (it has: {known})")]
    NoBuild {
        version: String,
        platform: String,
        known: String,
    },
    #[error("the manifest gives no SHA-256 for the {0} build; refusing to install an unverifiable binary")]
    NoChecksum(String),
    #[error("the manifest's SHA-256 for the {platform} build is malformed ({sha256:?}: want 64 hex characters); refusing to install")]
    BadChecksum { platform: String, sha256: String },
    #[error("the {platform} build's URL {url:?} is not http(s)")]
    BadUrl { platform: String, url: String },
}

/// One channel's current release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: String,
    pub protocol: u32,
    pub channel: String,
    #[serde(default)]
    pub notes: String,
    /// `linux-x86_64`, `linux-aarch64`, `macos-x86_64`, `macos-aarch64`.
    pub platforms: BTreeMap<String, Artifact>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    pub url: String,
    pub sha256: String,
    pub size: u64,
}

impl Manifest {
    /// Parses and checks a manifest; the error names what is wrong.
    pub fn parse(bytes: &[u8], channel: Channel) -> Result<Manifest, ManifestError> {
        let m: Manifest = serde_json::from_slice(bytes).map_err(ManifestError::Invalid)?;
        if Version::parse(&m.version).is_none() {
            return Err(ManifestError::BadVersion(m.version));
        }
        if m.channel != channel.as_str() {
            return Err(ManifestError::WrongChannel {
                want: channel,
                said: m.channel,
            });
        }
        Ok(m)
    }

    /// This machine's artifact, with its checksum checked for form before anything is
    /// downloaded.
    pub fn artifact(&self, platform: &str) -> Result<&Artifact, ManifestError> {
        let a = self
            .platforms
            .get(platform)
            .ok_or_else(|| ManifestError::NoBuild {
                version: self.version.clone(),
                platform: platform.into(),
                known: self
                    .platforms
                    .keys()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        if a.sha256.is_empty() {
            return Err(ManifestError::NoChecksum(platform.into()));
        }
        if a.sha256.len() != 64 || !a.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ManifestError::BadChecksum {
                platform: platform.into(),
                sha256: a.sha256.clone(),
            });
        }
        if !(a.url.starts_with("https://") || a.url.starts_with("http://")) {
            return Err(ManifestError::BadUrl {
                platform: platform.into(),
                url: a.url.clone(),
            });
        }
        Ok(a)
    }
}

/// This machine's platform name in manifests.
pub fn platform() -> String {
    format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH)
}

/// `X.Y.Z` (stable) or `X.Y.Z-preview.N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    /// The preview build; `None` for a release.
    pub preview: Option<u64>,
}

impl Version {
    pub fn parse(s: &str) -> Option<Version> {
        let (core, pre) = match s.split_once('-') {
            Some((c, p)) => (c, Some(p)),
            None => (s, None),
        };
        let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
        let (major, minor, patch) = (parts.next()??, parts.next()??, parts.next()??);
        if parts.next().is_some() {
            return None;
        }
        let preview = match pre {
            None => None,
            Some(p) => Some(p.strip_prefix("preview.")?.parse().ok()?),
        };
        Some(Version {
            major,
            minor,
            patch,
            preview,
        })
    }

    pub fn channel(&self) -> Channel {
        if self.preview.is_some() {
            Channel::Preview
        } else {
            Channel::Stable
        }
    }

    /// Total order where a preview of X.Y.Z comes before X.Y.Z itself.
    pub fn newer_than(&self, other: &Version) -> bool {
        let key = |v: &Version| {
            (
                v.major,
                v.minor,
                v.patch,
                v.preview.is_none(),
                v.preview.unwrap_or(0),
            )
        };
        key(self) > key(other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn versions_order_with_previews_before_their_release() {
        assert!(v("0.2.0").newer_than(&v("0.1.9")));
        assert!(v("0.2.0").newer_than(&v("0.2.0-preview.7")));
        assert!(v("0.2.0-preview.8").newer_than(&v("0.2.0-preview.7")));
        assert!(v("0.2.0-preview.1").newer_than(&v("0.1.0")));
        assert!(!v("0.1.0").newer_than(&v("0.1.0")));
        assert_eq!(v("1.2.3-preview.4").channel(), Channel::Preview);
        for bad in [
            "",
            "1.2",
            "1.2.3.4",
            "1.2.x",
            "1.2.3-beta.1",
            "1.2.3-preview.",
        ] {
            assert!(Version::parse(bad).is_none(), "{bad}");
        }
    }

    fn manifest(sha: &str) -> Vec<u8> {
        serde_json::json!({
            "version": "0.2.0", "protocol": 1, "channel": "stable", "notes": "",
            "platforms": { "linux-x86_64": { "url": "https://x/herdr", "sha256": sha, "size": 10 } }
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn checksums_are_checked_for_form_before_any_download() {
        let good = "a".repeat(64);
        let m = Manifest::parse(&manifest(&good), Channel::Stable).unwrap();
        assert!(m.artifact("linux-x86_64").is_ok());
        assert!(m
            .artifact("macos-aarch64")
            .unwrap_err()
            .to_string()
            .contains("no build"));
        let m = Manifest::parse(&manifest(""), Channel::Stable).unwrap();
        assert!(m
            .artifact("linux-x86_64")
            .unwrap_err()
            .to_string()
            .contains("no SHA-256"));
        let m = Manifest::parse(&manifest(&"g".repeat(64)), Channel::Stable).unwrap();
        assert!(m
            .artifact("linux-x86_64")
            .unwrap_err()
            .to_string()
            .contains("malformed"));
        assert!(Manifest::parse(&manifest(&good), Channel::Preview)
            .unwrap_err()
            .to_string()
            .contains("for channel"));
        assert!(Manifest::parse(b"{", Channel::Stable).is_err());
    }
}
