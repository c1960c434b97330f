//! Parsing of scheme and limiter names (command lines, configuration files).

use std::str::FromStr;

use super::{RtvdLimiter, Scheme, SlopeLimiter, TvdFlux, WafLimiter};
use crate::error::ConfigError;

fn unknown(what: &'static str, name: &str, expected: &'static str) -> ConfigError {
    ConfigError::UnknownName {
        what,
        name: name.to_string(),
        expected,
    }
}

pub(super) fn scheme_from_names(name: &str, limiter: Option<&str>) -> Result<Scheme, ConfigError> {
    let mut scheme = match name.to_ascii_lowercase().as_str() {
        "rtvd" => Scheme::rtvd(),
        "tvd" => Scheme::tvd(),
        "waf" => Scheme::waf(),
        _ => return Err(unknown("scheme", name, "rtvd, tvd, waf")),
    };
    if let Some(l) = limiter {
        match &mut scheme {
            Scheme::Rtvd { limiter } => *limiter = l.parse()?,
            Scheme::Tvd { slope, .. } => *slope = l.parse()?,
            Scheme::Waf { limiter } => *limiter = l.parse()?,
        }
    }
    Ok(scheme)
}

impl FromStr for RtvdLimiter {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "vanleer" | "van-leer" => Ok(Self::VanLeer),
            "minmod" => Ok(Self::Minmod),
            _ => Err(unknown("RTVD limiter", s, "vanleer, minmod")),
        }
    }
}

impl FromStr for SlopeLimiter {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "minmod" => Ok(Self::Minmod),
            "mc" => Ok(Self::Mc),
            _ => Err(unknown("TVD slope limiter", s, "minmod, mc")),
        }
    }
}

impl FromStr for TvdFlux {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "hll" => Ok(Self::Hll),
            "llf" | "rusanov" => Ok(Self::Llf),
            _ => Err(unknown("TVD flux", s, "hll, llf")),
        }
    }
}

impl FromStr for WafLimiter {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "superbee" => Ok(Self::Superbee),
            "vanleer" | "van-leer" => Ok(Self::VanLeer),
            "vanalbada" | "van-albada" => Ok(Self::VanAlbada),
            "minbee" => Ok(Self::Minbee),
            _ => Err(unknown(
                "WAF limiter",
                s,
                "superbee, vanleer, vanalbada, minbee",
            )),
        }
    }
}
