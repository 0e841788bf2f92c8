//! The stored form of a [`Schedule`]: a small versioned binary encoding,
//! kept in the store's schedule record and compared byte for byte to tell
//! an unchanged definition from a changed one.
//!
//! Layout (all integers little-endian): version byte (1); spec kind (0
//! `every`: period and anchor as u64 milliseconds; 1 cron: expression and
//! zone, each a u32 length and UTF-8 bytes); a flags byte (bit 0 start,
//! bit 1 end, bit 2 run limit) and each present one as u64; the jitter as
//! u64 seconds and u32 nanoseconds; the catch-up byte (0 skip, 1 latest,
//! 2 all, then its window as seconds and nanoseconds); the overlap byte (0
//! skip, 1 buffer one, 2 allow). Equal schedules encode to equal bytes.
//! Decoding rebuilds through [`ScheduleBuilder`](super::ScheduleBuilder),
//! so a decoded schedule passed every check a built one did.
//!
//! Node state: none (pure functions).

use std::time::{Duration, UNIX_EPOCH};

use super::instant::system_time;
use super::{CatchUp, Overlap, Schedule, Spec, SpecError};

/// The encoding's version byte.
const VERSION: u8 = 1;

impl Schedule {
    /// The stored form of this schedule (see the module docs).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = vec![VERSION];
        let spec = self.spec();
        match (spec.period(), spec.anchor(), spec.expression(), spec.zone()) {
            (Some(period), Some(anchor), _, _) => {
                b.push(0);
                put_u64(&mut b, ms(period));
                put_u64(
                    &mut b,
                    ms(anchor.duration_since(UNIX_EPOCH).unwrap_or_default()),
                );
            }
            (_, _, Some(expression), Some(zone)) => {
                b.push(1);
                put_str(&mut b, expression);
                put_str(&mut b, zone);
            }
            // Every spec is one of the two kinds.
            _ => b.push(u8::MAX),
        }
        let since = |t: std::time::SystemTime| ms(t.duration_since(UNIX_EPOCH).unwrap_or_default());
        let flags = u8::from(self.start().is_some())
            | u8::from(self.end().is_some()) << 1
            | u8::from(self.run_limit().is_some()) << 2;
        b.push(flags);
        for t in [self.start(), self.end()].into_iter().flatten() {
            put_u64(&mut b, since(t));
        }
        if let Some(n) = self.run_limit() {
            put_u64(&mut b, n.get());
        }
        put_duration(&mut b, self.jitter());
        match self.catch_up() {
            CatchUp::Skip => b.push(0),
            CatchUp::Latest => b.push(1),
            CatchUp::All { window } => {
                b.push(2);
                put_duration(&mut b, window);
            }
        }
        b.push(match self.overlap() {
            Overlap::Skip => 0,
            Overlap::BufferOne => 1,
            Overlap::Allow => 2,
        });
        b
    }

    /// A schedule from its stored form.
    ///
    /// [`SpecError::Undecodable`] for bytes this version did not write;
    /// [`SpecError::CronFeatureOff`] for a cron schedule read by a build
    /// without the `cron` feature.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Schedule, SpecError> {
        let mut r = Reader(bytes);
        if r.u8()? != VERSION {
            return Err(SpecError::Undecodable);
        }
        let spec = match r.u8()? {
            0 => {
                let period = Duration::from_millis(r.u64()?);
                let anchor =
                    system_time(i64::try_from(r.u64()?).map_err(|_| SpecError::Undecodable)?);
                Spec::every_from(period, anchor)?
            }
            1 => {
                let expression = r.str()?;
                let zone = r.str()?;
                Spec::cron(&expression, &zone)?
            }
            _ => return Err(SpecError::Undecodable),
        };
        let mut builder = Schedule::builder(spec);
        let flags = r.u8()?;
        let at = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
        if flags & 1 != 0 {
            builder = builder.start(at(r.u64()?));
        }
        if flags & 2 != 0 {
            builder = builder.end(at(r.u64()?));
        }
        if flags & 4 != 0 {
            builder = builder.run_limit(r.u64()?);
        }
        builder = builder.jitter(r.duration()?);
        builder = builder.catch_up(match r.u8()? {
            0 => CatchUp::Skip,
            1 => CatchUp::Latest,
            2 => CatchUp::All {
                window: r.duration()?,
            },
            _ => return Err(SpecError::Undecodable),
        });
        builder = builder.overlap(match r.u8()? {
            0 => Overlap::Skip,
            1 => Overlap::BufferOne,
            2 => Overlap::Allow,
            _ => return Err(SpecError::Undecodable),
        });
        if !r.0.is_empty() || flags & !7 != 0 {
            return Err(SpecError::Undecodable);
        }
        builder.build()
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn put_u64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    // Cron expressions and zone names are short; a longer one is cut to
    // what decodes as a refusal rather than written wrong.
    let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

fn put_duration(b: &mut Vec<u8>, d: Duration) {
    put_u64(b, d.as_secs());
    b.extend_from_slice(&d.subsec_nanos().to_le_bytes());
}

/// Reads the encoding front to back; any shortfall is [`SpecError::Undecodable`].
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], SpecError> {
        let (head, tail) = self.0.split_at_checked(n).ok_or(SpecError::Undecodable)?;
        self.0 = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, SpecError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, SpecError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, SpecError> {
        let mut a = [0; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }

    fn str(&mut self) -> Result<String, SpecError> {
        let len = usize::try_from(self.u32()?).map_err(|_| SpecError::Undecodable)?;
        let b = self.take(len)?;
        String::from_utf8(b.to_vec()).map_err(|_| SpecError::Undecodable)
    }

    fn duration(&mut self) -> Result<Duration, SpecError> {
        let secs = self.u64()?;
        let nanos = self.u32()?;
        if nanos >= 1_000_000_000 {
            return Err(SpecError::Undecodable);
        }
        Ok(Duration::new(secs, nanos))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn every() -> Schedule {
        let t = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        Schedule::builder(Spec::every_from(Duration::from_secs(90), t).unwrap())
            .start(t)
            .end(t + Duration::from_secs(86_400))
            .run_limit(7)
            .jitter(Duration::from_millis(1_500))
            .catch_up(CatchUp::All {
                window: Duration::from_secs(600),
            })
            .overlap(Overlap::BufferOne)
            .build()
            .unwrap()
    }

    #[test]
    fn schedules_round_trip() {
        let plain = Schedule::builder(Spec::every(Duration::from_secs(1)).unwrap())
            .build()
            .unwrap();
        // A cron schedule too where the feature is on.
        let cron = Spec::cron("*/15 * * * *", "Europe/Berlin")
            .ok()
            .map(|spec| {
                Schedule::builder(spec)
                    .overlap(Overlap::Allow)
                    .catch_up(CatchUp::Skip)
                    .build()
                    .unwrap()
            });
        let all = [every(), plain].into_iter().chain(cron);
        for s in all {
            let bytes = s.encode();
            assert_eq!(Schedule::decode(&bytes), Ok(s.clone()));
            assert_eq!(Schedule::decode(&bytes).unwrap().encode(), bytes);
        }
    }

    #[test]
    fn damaged_bytes_are_refused_never_trusted() {
        let bytes = every().encode();
        for cut in 0..bytes.len() {
            assert!(Schedule::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(Schedule::decode(&longer), Err(SpecError::Undecodable));
        let mut newer = bytes;
        newer[0] = 2;
        assert_eq!(Schedule::decode(&newer), Err(SpecError::Undecodable));
        // A period under the floor fails the builder's own check.
        let mut short = every().encode();
        short[2..10].copy_from_slice(&10u64.to_le_bytes());
        assert!(matches!(
            Schedule::decode(&short),
            Err(SpecError::PeriodTooShort { .. })
        ));
    }
}
