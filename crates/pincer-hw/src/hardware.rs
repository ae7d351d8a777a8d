//! `Hardware`: the one handle callers use. Send + Sync; on Linux it opens
//! devices lazily per operation, so a missing /dev node only fails the
//! operation that needs it. The GPIO backend is kept for the handle's life
//! so driven output lines stay driven.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::board::{Board, BoardKind, Detection, GpioPin, PinFunction};
use crate::bus::{BusInfo, Gpio, I2cBus, I2cRead, SpiBus, TransferPath};
use crate::camera;
use crate::config::HardwareConfig;
use crate::error::HwError;
use crate::sim::{SimBoard, SimTransaction};
use crate::validate::{I2cAddr, Level, ReadLen, SpiData, WriteData, parse_spi_device, parse_u8};

/// A captured image.
#[derive(Debug, Clone, Serialize)]
pub struct Capture {
    pub path: PathBuf,
    pub bytes: u64,
    pub sha256: String,
    /// "ppm" | "jpeg".
    pub format: &'static str,
    /// The argv that ran; None for the sim.
    pub argv: Option<Vec<String>>,
}

#[derive(Debug)]
enum Backend {
    Sim(SimBoard),
    #[cfg(target_os = "linux")]
    Linux {
        gpio: Mutex<crate::linux::LinuxGpio>,
    },
}

#[derive(Debug)]
pub struct Hardware {
    cfg: HardwareConfig,
    detection: Detection,
    backend: Backend,
    last_capture: Mutex<Option<Instant>>,
    capture_seq: AtomicU64,
}

// Callers share one Hardware across tasks (Arc) and spawn_blocking.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Hardware>();
};

impl Hardware {
    /// Sim board → a SimBoard from `cfg.sim`; Linux boards → lazily opened
    /// Linux backends (Unsupported on other operating systems).
    pub fn open(cfg: &HardwareConfig, detection: Detection) -> Result<Hardware, HwError> {
        let backend = match detection.board.kind {
            BoardKind::Sim => Backend::Sim(SimBoard::new(&cfg.sim)?),
            #[cfg(target_os = "linux")]
            BoardKind::JetsonOrinNano | BoardKind::RpiZero2W => Backend::Linux {
                gpio: Mutex::new(crate::linux::LinuxGpio::new()),
            },
            #[cfg(not(target_os = "linux"))]
            _ => {
                return Err(HwError::Unsupported(format!(
                    "{}: the hardware backends need Linux",
                    detection.board.name
                )));
            }
        };
        Ok(Hardware {
            cfg: cfg.clone(),
            detection,
            backend,
            last_capture: Mutex::new(None),
            capture_seq: AtomicU64::new(0),
        })
    }

    pub fn detection(&self) -> &Detection {
        &self.detection
    }

    pub fn board(&self) -> &Board {
        &self.detection.board
    }

    pub fn config(&self) -> &HardwareConfig {
        &self.cfg
    }

    /// Some for the sim board (tests assert on its transactions).
    pub fn sim(&self) -> Option<&SimBoard> {
        match &self.backend {
            Backend::Sim(s) => Some(s),
            #[cfg(target_os = "linux")]
            Backend::Linux { .. } => None,
        }
    }

    /// `cfg.i2c_bus`, else the N of the board's default /dev/i2c-N; None for
    /// the sim.
    pub fn default_i2c_bus(&self) -> Option<u8> {
        if self.sim().is_some() {
            return None;
        }
        self.cfg.i2c_bus.or_else(|| {
            self.board()
                .i2c_default
                .and_then(|d| d.strip_prefix("/dev/i2c-"))
                .and_then(|n| parse_u8("bus", n).ok())
        })
    }

    /// `cfg.spi_device`, else the board's default /dev/spidevB.C; None for
    /// the sim.
    pub fn default_spi_device(&self) -> Option<(u8, u8)> {
        if self.sim().is_some() {
            return None;
        }
        self.cfg
            .spi_device
            .or_else(|| parse_spi_device(self.board().spi_default?.strip_prefix("/dev/spidev")?))
    }

    /// Board, detection, defaults, pin table summary and I2C bus info (an
    /// unopenable bus is reported in the value, not as an error).
    pub fn info(&self) -> serde_json::Value {
        let board = self.board();
        let mut gpio = Vec::new();
        let mut special = Vec::new();
        for p in board.pins {
            match &p.function {
                PinFunction::Gpio { chip, line, name } => gpio.push(serde_json::json!({
                    "pin": p.pin, "name": name, "chip": chip, "line": line
                })),
                PinFunction::Special(f) => {
                    special.push(serde_json::json!({ "pin": p.pin, "function": f }));
                }
                PinFunction::Power(_) => {}
            }
        }
        let i2c = match self.with_i2c(None, |b| b.info()) {
            Ok(info) => serde_json::to_value(info).unwrap_or_default(),
            Err(e) => serde_json::json!({ "error": e.to_string() }),
        };
        serde_json::json!({
            "board": { "kind": board.kind, "name": board.name },
            "detection": self.detection.source,
            "warning": self.detection.warning,
            "backend": if self.sim().is_some() { "sim" } else { "linux" },
            "i2c_default": self.default_i2c_bus().map(|n| format!("/dev/i2c-{n}"))
                .or_else(|| self.sim().map(|_| "sim-i2c (bus 0)".to_string())),
            "spi_default": self.default_spi_device().map(|(b, c)| format!("/dev/spidev{b}.{c}")),
            "pins": { "gpio": gpio, "special": special },
            "i2c": i2c,
            "camera_min_interval_ms": self.cfg.camera_min_interval_ms,
        })
    }

    fn sim_bus_check(bus: Option<u8>) -> Result<(), HwError> {
        match bus {
            None | Some(0) => Ok(()),
            Some(n) => Err(HwError::invalid(
                "bus",
                format!("bus {n}: the sim board has one I2C bus, 0 (sim-i2c)"),
            )),
        }
    }

    fn with_i2c<T>(
        &self,
        bus: Option<u8>,
        f: impl FnOnce(&mut dyn I2cBus) -> Result<T, HwError>,
    ) -> Result<T, HwError> {
        match &self.backend {
            Backend::Sim(s) => {
                Self::sim_bus_check(bus)?;
                f(&mut s.i2c())
            }
            #[cfg(target_os = "linux")]
            Backend::Linux { .. } => {
                let n = bus.or_else(|| self.default_i2c_bus()).ok_or_else(|| {
                    HwError::Unsupported(format!(
                        "{} has no default I2C bus; pass one",
                        self.board().name
                    ))
                })?;
                f(&mut crate::linux::LinuxI2c::open(n)?)
            }
        }
    }

    pub fn i2c_scan(&self, bus: Option<u8>) -> Result<(BusInfo, Vec<I2cAddr>), HwError> {
        self.with_i2c(bus, |b| {
            let info = b.info()?;
            Ok((info, b.scan()?))
        })
    }

    pub fn i2c_read(
        &self,
        bus: Option<u8>,
        addr: I2cAddr,
        register: Option<u8>,
        len: ReadLen,
    ) -> Result<I2cRead, HwError> {
        self.with_i2c(bus, |b| b.read(addr, register, len))
    }

    pub fn i2c_write(
        &self,
        bus: Option<u8>,
        addr: I2cAddr,
        data: &WriteData,
    ) -> Result<TransferPath, HwError> {
        self.with_i2c(bus, |b| b.write(addr, data))
    }

    pub fn spi_transfer(&self, device: Option<(u8, u8)>, tx: &SpiData) -> Result<Vec<u8>, HwError> {
        match &self.backend {
            Backend::Sim(s) => {
                if let Some((b, c)) = device
                    && (b, c) != (0, 0)
                {
                    return Err(HwError::invalid(
                        "device",
                        format!(
                            "spidev{b}.{c}: the sim board has one SPI device, 0.0 (a loopback)"
                        ),
                    ));
                }
                s.spi().transfer(tx)
            }
            #[cfg(target_os = "linux")]
            Backend::Linux { .. } => {
                let (b, c) = device
                    .or_else(|| self.default_spi_device())
                    .ok_or_else(|| {
                        HwError::Unsupported(format!("{} has no SPI device", self.board().name))
                    })?;
                crate::linux::LinuxSpi::open(b, c)?.transfer(tx)
            }
        }
    }

    fn with_gpio<T>(
        &self,
        f: impl FnOnce(&mut dyn Gpio) -> Result<T, HwError>,
    ) -> Result<T, HwError> {
        match &self.backend {
            Backend::Sim(s) => f(&mut s.gpio()),
            #[cfg(target_os = "linux")]
            Backend::Linux { gpio } => {
                let mut g = gpio.lock().unwrap_or_else(|e| e.into_inner());
                f(&mut *g)
            }
        }
    }

    /// Validates `pin` against the board's table, then reads it.
    pub fn gpio_read(&self, pin: u32) -> Result<(GpioPin, Level), HwError> {
        let p = self.board().gpio_pin(pin)?;
        let level = self.with_gpio(|g| g.read(&p))?;
        Ok((p, level))
    }

    /// Validates `pin`, then drives it; the line stays driven while this
    /// `Hardware` lives.
    pub fn gpio_write(&self, pin: u32, level: Level) -> Result<GpioPin, HwError> {
        let p = self.board().gpio_pin(pin)?;
        self.with_gpio(|g| g.write(&p, level))?;
        Ok(p)
    }

    /// Decodes a reading (sim only).
    pub fn decode(&self, addr: I2cAddr, register: Option<u8>, data: &[u8]) -> Option<String> {
        self.sim()?.decode(addr, register, data)
    }

    /// HW6: writes an image into `dir` (created if missing) and returns it.
    /// A second capture within `camera_min_interval_ms` of the previous
    /// attempt → RateLimited, before anything is spawned or recorded.
    pub fn camera_capture(&self, dir: &Path) -> Result<Capture, HwError> {
        self.rate_limit()?;
        std::fs::create_dir_all(dir)
            .map_err(|e| HwError::io("create directory", dir.display().to_string(), e))?;
        let (ext, format) = match self.board().kind {
            BoardKind::Sim => ("ppm", "ppm"),
            _ => ("jpg", "jpeg"),
        };
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        let seq = self.capture_seq.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("capture-{ms}-{seq}.{ext}"));
        let argv = match &self.backend {
            Backend::Sim(s) => {
                s.record(SimTransaction::CameraCapture);
                std::fs::write(&path, camera::sim_image())
                    .map_err(|e| HwError::io("write", path.display().to_string(), e))?;
                None
            }
            #[cfg(target_os = "linux")]
            Backend::Linux { .. } => {
                let argv = camera::camera_argv(self.board().kind, &path).ok_or_else(|| {
                    HwError::Unsupported(format!("{} has no camera", self.board().name))
                })?;
                camera::run_capture(
                    &argv,
                    &path,
                    camera::CAPTURE_TIMEOUT,
                    &camera::parent_capture_env(),
                )?;
                Some(argv)
            }
        };
        let data =
            std::fs::read(&path).map_err(|e| HwError::io("read", path.display().to_string(), e))?;
        Ok(Capture {
            bytes: data.len() as u64,
            sha256: camera::sha256_hex(&data),
            path,
            format,
            argv,
        })
    }

    fn rate_limit(&self) -> Result<(), HwError> {
        let min = Duration::from_millis(self.cfg.camera_min_interval_ms);
        let mut last = self.last_capture.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if let Some(prev) = *last {
            let since = now.duration_since(prev);
            if since < min {
                let wait = min - since;
                let ms = wait.as_millis().max(1);
                return Err(HwError::RateLimited {
                    retry_after_ms: u64::try_from(ms).unwrap_or(u64::MAX),
                });
            }
        }
        *last = Some(now);
        Ok(())
    }
}
