//! The level layout of a wheel and the bit arithmetic on it.
//!
//! A layout is a list of levels, lowest first. Level `i` has `2^bits[i]`
//! slots and each of its slots covers `2^shift[i]` ticks, where `shift[i]` is
//! the sum of the bits of the levels below it. One full turn of level `i`
//! therefore covers `2^(shift[i] + bits[i])` ticks, which is exactly one slot
//! of level `i + 1`. The whole wheel spans `2^total_bits` ticks; deadlines
//! further away than that go to the top level and wait there for as many
//! turns as they need (see `docs/design.md`, "Cycles").
//!
//! Every function here is pure and has boundary tests below.

use std::fmt;

/// The most bits (log2 of the slot count) one level may have: 65 536 slots.
pub(crate) const MAX_SLOT_BITS: u32 = 16;

/// The most bits a whole layout may span: a `u64` tick.
pub(crate) const MAX_TOTAL_BITS: u32 = 64;

/// The default layout: eight levels of 256 slots, spanning all of `u64`.
///
/// Chosen by measurement against other layouts (see `docs/design.md`,
/// "Choosing the default layout", and `docs/benchmarks.md`).
pub(crate) const DEFAULT_SLOT_BITS: [u32; 8] = [8; 8];

/// Why a [`WheelConfig`] was rejected.
///
/// # Examples
///
/// ```
/// use wheel::{ConfigError, WheelConfig};
///
/// assert_eq!(WheelConfig::new(&[]), Err(ConfigError::Empty));
/// assert_eq!(WheelConfig::new(&[6, 0]), Err(ConfigError::ZeroBits { level: 1 }));
/// assert_eq!(
///     WheelConfig::new(&[17]),
///     Err(ConfigError::TooManyBits { level: 0, bits: 17 })
/// );
/// assert_eq!(
///     WheelConfig::new(&[16; 5]),
///     Err(ConfigError::TooWide { total_bits: 80 })
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigError {
    /// The layout has no level.
    Empty,
    /// A level has zero bits (a single slot), which cannot hold time apart.
    ZeroBits {
        /// The offending level, lowest first.
        level: usize,
    },
    /// A level has more than 16 bits (65 536 slots).
    TooManyBits {
        /// The offending level, lowest first.
        level: usize,
        /// The bits asked for.
        bits: u32,
    },
    /// The levels together span more than 64 bits.
    TooWide {
        /// The sum of the bits asked for (saturating).
        total_bits: u32,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Empty => f.write_str("a wheel layout needs at least one level"),
            ConfigError::ZeroBits { level } => {
                write!(f, "level {level} has 0 bits; every level needs at least 1")
            }
            ConfigError::TooManyBits { level, bits } => write!(
                f,
                "level {level} has {bits} bits; at most {MAX_SLOT_BITS} are allowed"
            ),
            ConfigError::TooWide { total_bits } => write!(
                f,
                "the levels span {total_bits} bits; at most {MAX_TOTAL_BITS} are allowed"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// The level layout of a [`Wheel`](crate::Wheel): how many slots each level
/// has.
///
/// # Examples
///
/// ```
/// use wheel::{Wheel, WheelConfig};
///
/// // Six levels of 64 slots: 36 bits, about 795 days of 1 ms ticks before
/// // deadlines start to wait for extra turns of the top level.
/// let config = WheelConfig::new(&[6; 6]).unwrap();
/// assert_eq!(config.span_bits(), 36);
/// let mut wheel: Wheel<&str> = Wheel::with_config(config);
/// wheel.insert(10, "ten");
/// assert_eq!(wheel.poll(10).map(|e| e.value), Some("ten"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WheelConfig {
    bits: Vec<u32>,
}

impl WheelConfig {
    /// A layout with one entry per level, lowest first: log2 of that level's
    /// slot count (e.g. `[6; 6]`).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] for an empty layout, a level of 0 bits or of more than
    /// 16 bits, or levels wider than 64 bits in
    /// total. Never panics.
    ///
    /// # Examples
    ///
    /// ```
    /// use wheel::WheelConfig;
    /// assert!(WheelConfig::new(&[8, 8, 8, 8, 8, 8, 8, 8]).is_ok());
    /// assert!(WheelConfig::new(&[0]).is_err());
    /// ```
    pub fn new(slot_bits: &[u32]) -> Result<WheelConfig, ConfigError> {
        if slot_bits.is_empty() {
            return Err(ConfigError::Empty);
        }
        let mut total: u32 = 0;
        for (level, &bits) in slot_bits.iter().enumerate() {
            if bits == 0 {
                return Err(ConfigError::ZeroBits { level });
            }
            if bits > MAX_SLOT_BITS {
                return Err(ConfigError::TooManyBits { level, bits });
            }
            total = total.saturating_add(bits);
        }
        if total > MAX_TOTAL_BITS {
            return Err(ConfigError::TooWide { total_bits: total });
        }
        Ok(WheelConfig {
            bits: slot_bits.to_vec(),
        })
    }

    /// log2 of each level's slot count, lowest level first.
    ///
    /// # Examples
    ///
    /// ```
    /// let c = wheel::WheelConfig::new(&[4, 5]).unwrap();
    /// assert_eq!(c.slot_bits(), &[4, 5]);
    /// ```
    pub fn slot_bits(&self) -> &[u32] {
        &self.bits
    }

    /// How many bits of a tick the levels cover together: the wheel spans
    /// `2^span_bits()` ticks before deadlines wait extra turns of the top.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(wheel::WheelConfig::default().span_bits(), 64);
    /// ```
    pub fn span_bits(&self) -> u32 {
        self.bits.iter().sum()
    }
}

impl Default for WheelConfig {
    /// The default layout: eight levels of 256 slots (`[8; 8]`), spanning
    /// all 64 bits of a tick.
    fn default() -> Self {
        WheelConfig {
            bits: DEFAULT_SLOT_BITS.to_vec(),
        }
    }
}

/// Sizes that trade memory or work per wheel for speed at scale: fixed
/// when a wheel is built, the same for every layout.
///
/// Every wheel runs [`Tuning::DEFAULT`]. The model-based tests and the fuzz
/// targets also run `Tuning::SMALL`, whose thresholds a wheel of a few
/// dozen timers crosses all the time, so that the paths these sizes guard
/// (lanes of fresh indices, new chunks, sweeps) run constantly; they run
/// the default too, so the sizes every user gets are tested as well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tuning {
    /// Lazily dead cells allowed beyond `COMPACT_RATIO` per pending timer
    /// before a sweep starts (see `core/lazy.rs`).
    pub(crate) sweep_min: usize,
    /// Lanes of fresh slab indices (a power of two, see `core/slab.rs`).
    pub(crate) lanes: usize,
    /// Fresh indices a lane takes at a time.
    pub(crate) chunk: u32,
    /// Slabs smaller than this many entries take fresh indices one at a
    /// time, in order, and reserve nothing. A `u32`: a slab below it has
    /// room for one more index, which the compiler then knows.
    pub(crate) lanes_from: u32,
}

impl Tuning {
    /// The sizes of every wheel.
    ///
    /// - `sweep_min`: 64 KiB of cells, which keeps small wheels that cancel
    ///   everything they insert (a `DelayQueue` of a few thousand items)
    ///   from sweeping at all.
    /// - `lanes`: one per level-1 slot of the default layout.
    /// - `chunk`: 64 entries are 1.5 KiB with a `u64` payload, enough for
    ///   the hardware to stream them.
    /// - `lanes_from`: 1.5 MiB of entries with a `u64` payload, about what
    ///   stays in cache anyway.
    pub(crate) const DEFAULT: Tuning = Tuning {
        sweep_min: 1 << 14,
        lanes: 256,
        chunk: 64,
        lanes_from: 1 << 16,
    };

    /// Sizes that a wheel of a few dozen timers goes past: it sweeps, opens
    /// lanes and uses up chunks all the time.
    #[cfg(any(test, fuzzing))]
    pub(crate) const SMALL: Tuning = Tuning {
        sweep_min: 8,
        lanes: 4,
        chunk: 4,
        lanes_from: 8,
    };
}

/// The geometry of one level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LevelGeom {
    /// Ticks per slot, as a power of two.
    pub(crate) shift: u32,
    /// Slots per level, as a power of two.
    pub(crate) bits: u32,
    /// `2^bits - 1`, stored so that [`slot_of`](LevelGeom::slot_of), on
    /// every insert and cancel, is a shift and an AND (computing the mask
    /// each time costs more instructions).
    mask: u64,
}

impl LevelGeom {
    /// The level whose slots are `2^shift` ticks wide, `2^bits` of them
    /// (`bits` at most 16, as [`WheelConfig::new`] checks).
    pub(crate) const fn new(shift: u32, bits: u32) -> LevelGeom {
        LevelGeom {
            shift,
            bits,
            mask: (1u64 << bits) - 1,
        }
    }

    /// Number of slots.
    pub(crate) fn slots(self) -> usize {
        1usize << self.bits
    }

    /// The slot of this level that tick `when` maps to.
    #[inline]
    pub(crate) fn slot_of(self, when: u64) -> usize {
        ((when >> self.shift) & self.mask) as usize
    }

    /// The first tick of the slot containing `when` (`when` with the bits
    /// below this level's slot size cleared).
    #[inline]
    pub(crate) fn slot_start(self, when: u64) -> u64 {
        // `shift < 64`: the layout spans at most 64 bits and every level has
        // at least one.
        (when >> self.shift) << self.shift
    }

    /// The start of slot `slot` in the turn of this level that contains
    /// `elapsed`. Only meaningful when that slot lies in the current turn.
    pub(crate) fn slot_start_in_turn(self, elapsed: u64, slot: usize) -> u64 {
        (elapsed & !low_mask(self.shift + self.bits)) | ((slot as u64) << self.shift)
    }
}

/// `2^bits - 1`, also for `bits == 64`.
pub(crate) fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// The validated layout in the form the wheel uses.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub(crate) levels: Vec<LevelGeom>,
    /// For each bit position of a tick, the level whose range holds it.
    /// Positions at or above the span map to the top level.
    level_of_bit: [u8; 64],
}

impl Layout {
    pub(crate) fn new(config: &WheelConfig) -> Layout {
        let mut levels = Vec::with_capacity(config.bits.len());
        let mut shift = 0;
        for &bits in &config.bits {
            levels.push(LevelGeom::new(shift, bits));
            shift += bits;
        }
        let top = (levels.len() - 1) as u8;
        let mut level_of_bit = [top; 64];
        for (i, g) in levels.iter().enumerate() {
            for bit in g.shift..(g.shift + g.bits) {
                level_of_bit[bit as usize] = i as u8;
            }
        }
        Layout {
            levels,
            level_of_bit,
        }
    }

    /// Index of the top level.
    #[inline]
    pub(crate) fn top(&self) -> usize {
        self.levels.len() - 1
    }

    /// The level an entry due at `when` belongs to while the wheel's
    /// processed time is `elapsed`: the level whose bit range holds the
    /// highest bit in which the two differ. Deadlines beyond the span (a
    /// differing bit above all levels) belong to the top level.
    #[inline]
    pub(crate) fn level_for(&self, elapsed: u64, when: u64) -> usize {
        let diff = elapsed ^ when;
        if diff == 0 {
            return 0;
        }
        let high_bit = 63 - diff.leading_zeros();
        self.level_of_bit[high_bit as usize] as usize
    }

    /// The level-1 slot that can be staged while the processed time is
    /// `elapsed`: the one that comes up at the start of the next level-0
    /// turn, as `(start, slot)`. `None` if level 1 is the top level (its
    /// slots may hold later turns) or does not exist, or if that start
    /// begins a new level-1 turn (a higher level's cascade comes first) or
    /// lies past `u64::MAX`.
    pub(crate) fn stage_target(&self, elapsed: u64) -> Option<(u64, usize)> {
        if self.levels.len() < 3 {
            return None;
        }
        let (l0, l1) = (self.levels[0], self.levels[1]);
        let start = (elapsed | low_mask(l0.bits)).checked_add(1)?;
        let turn = !low_mask(l1.shift + l1.bits);
        (start & turn == elapsed & turn).then(|| (start, l1.slot_of(start)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout_of(bits: &[u32]) -> Layout {
        Layout::new(&WheelConfig::new(bits).unwrap())
    }

    #[test]
    fn config_validation() {
        assert_eq!(WheelConfig::new(&[]), Err(ConfigError::Empty));
        assert_eq!(
            WheelConfig::new(&[1, 0, 3]),
            Err(ConfigError::ZeroBits { level: 1 })
        );
        assert_eq!(
            WheelConfig::new(&[16, 17]),
            Err(ConfigError::TooManyBits { level: 1, bits: 17 })
        );
        assert_eq!(
            WheelConfig::new(&[16, 16, 16, 16, 1]),
            Err(ConfigError::TooWide { total_bits: 65 })
        );
        assert_eq!(
            WheelConfig::new(&[u32::MAX]),
            Err(ConfigError::TooManyBits {
                level: 0,
                bits: u32::MAX
            })
        );
        // 64 one-bit levels: the most levels a layout can have.
        assert_eq!(WheelConfig::new(&[1; 64]).unwrap().span_bits(), 64);
        assert!(WheelConfig::new(&[1; 65]).is_err());
        assert!(WheelConfig::new(&[16; 4]).is_ok());
        assert!(
            ConfigError::Empty
                .to_string()
                .contains("at least one level")
        );
    }

    #[test]
    fn low_mask_boundaries() {
        assert_eq!(low_mask(0), 0);
        assert_eq!(low_mask(1), 1);
        assert_eq!(low_mask(63), u64::MAX >> 1);
        assert_eq!(low_mask(64), u64::MAX);
    }

    #[test]
    fn stage_target_boundaries() {
        let layout = layout_of(&[6, 6, 6]);
        // The next level-0 turn starts at 64, in level-1 slot 1.
        assert_eq!(layout.stage_target(0), Some((64, 1)));
        assert_eq!(layout.stage_target(63), Some((64, 1)));
        assert_eq!(layout.stage_target(64), Some((128, 2)));
        // 4096 starts a new level-1 turn: level 2 cascades there first.
        assert_eq!(layout.stage_target(4095 - 63), None);
        assert_eq!(layout.stage_target(4095), None);
        assert_eq!(layout.stage_target(4096), Some((4096 + 64, 1)));
        assert_eq!(layout.stage_target(u64::MAX), None);
        assert_eq!(
            layout.stage_target(u64::MAX - 64),
            Some((u64::MAX - 63, 63))
        );
        // Level 1 must not be the top level.
        assert_eq!(layout_of(&[6, 6]).stage_target(0), None);
        assert_eq!(layout_of(&[6]).stage_target(0), None);
        // Levels that end at bit 64.
        let layout = layout_of(&[8; 8]);
        assert_eq!(layout.stage_target(0), Some((256, 1)));
        assert_eq!(
            layout.stage_target(u64::MAX - 256),
            Some((u64::MAX - 255, 255))
        );
        assert_eq!(layout.stage_target(u64::MAX - 255), None);
        // 0x...fffe_ff00 starts the last level-0 turn of a level-1 turn.
        assert_eq!(
            layout.stage_target(u64::MAX - 65536 - 300),
            Some((u64::MAX - 65791, 255))
        );
        assert_eq!(layout.stage_target(u64::MAX - 65791), None);
    }

    #[test]
    fn level_for_boundaries_near_zero() {
        let layout = layout_of(&[6, 6, 6]);
        assert_eq!(layout.level_for(0, 0), 0);
        assert_eq!(layout.level_for(0, 1), 0);
        assert_eq!(layout.level_for(0, 63), 0);
        assert_eq!(layout.level_for(0, 64), 1);
        assert_eq!(layout.level_for(63, 64), 1);
        assert_eq!(layout.level_for(64, 127), 0);
        assert_eq!(layout.level_for(0, 4095), 1);
        assert_eq!(layout.level_for(0, 4096), 2);
        assert_eq!(layout.level_for(0, (1 << 18) - 1), 2);
        // Beyond the 18-bit span: top level, waiting for turns.
        assert_eq!(layout.level_for(0, 1 << 18), 2);
        assert_eq!(layout.level_for(0, u64::MAX), 2);
    }

    #[test]
    fn level_for_boundaries_near_max() {
        let layout = layout_of(&[8; 8]);
        assert_eq!(layout.level_for(u64::MAX - 1, u64::MAX), 0);
        assert_eq!(layout.level_for(u64::MAX - 255, u64::MAX), 0);
        assert_eq!(layout.level_for(u64::MAX - 256, u64::MAX), 1);
        assert_eq!(layout.level_for(0, u64::MAX), 7);
        assert_eq!(layout.level_for(1 << 63, u64::MAX), 7);
        assert_eq!(layout.level_for((1 << 56) - 1, 1 << 56), 7);
        assert_eq!(layout.level_for((1 << 56) - 1, (1 << 56) - 2 + 1), 0);
    }

    #[test]
    fn uneven_layout_levels() {
        let layout = layout_of(&[3, 1, 4]);
        assert_eq!(layout.levels[1], LevelGeom::new(3, 1));
        assert_eq!(layout.levels[2], LevelGeom::new(4, 4));
        assert_eq!(layout.level_for(0, 7), 0);
        assert_eq!(layout.level_for(0, 8), 1);
        assert_eq!(layout.level_for(0, 15), 1);
        assert_eq!(layout.level_for(0, 16), 2);
        assert_eq!(layout.level_for(0, 255), 2);
        assert_eq!(layout.level_for(0, 256), 2); // beyond the 8-bit span
        assert_eq!(layout.top(), 2);
        // A single level is its own top.
        let one = layout_of(&[4]);
        assert_eq!(one.level_for(0, 15), 0);
        assert_eq!(one.level_for(0, 16), 0);
    }

    #[test]
    fn slot_arithmetic() {
        let g = LevelGeom::new(6, 6);
        assert_eq!(g.slots(), 64);
        assert_eq!(g.slot_of(0), 0);
        assert_eq!(g.slot_of(63), 0);
        assert_eq!(g.slot_of(64), 1);
        assert_eq!(g.slot_of(4095), 63);
        assert_eq!(g.slot_of(4096), 0);
        assert_eq!(g.slot_of(u64::MAX), 63);
        assert_eq!(g.slot_start(130), 128);
        assert_eq!(g.slot_start(u64::MAX), 0xFFFF_FFFF_FFFF_FFC0);
        assert_eq!(g.slot_start_in_turn(4096 + 70, 5), 4096 + 5 * 64);
        assert_eq!(g.slot_start_in_turn(u64::MAX, 63), 0xFFFF_FFFF_FFFF_FFC0);
        let top = LevelGeom::new(56, 8);
        assert_eq!(top.slot_of(u64::MAX), 255);
        assert_eq!(top.slot_start_in_turn(12345, 255), 255 << 56);
        let g0 = LevelGeom::new(0, 16);
        assert_eq!(g0.slot_of(u64::MAX), 65535);
        assert_eq!(g0.slot_start(u64::MAX), u64::MAX);
    }
}
