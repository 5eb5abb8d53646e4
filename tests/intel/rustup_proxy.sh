#!/bin/sh
# A fake of rustup's rust-analyzer proxy where the component is not installed (the usual case on a machine
# with rustup): it starts no server; it says why in one line and, with RUST_BACKTRACE set (common among Rust
# developers), follows it with anyhow's backtrace, as rustup 1.28 does; exit 1. Its last lines say nothing.
echo "error: Unknown binary 'rust-analyzer' in official toolchain 'stable-x86_64-unknown-linux-gnu'." >&2
if [ -n "${RUST_BACKTRACE:-}" ] && [ "$RUST_BACKTRACE" != 0 ]; then
  cat >&2 <<'TRACE'

Stack backtrace:
   0: anyhow::kind::Adhoc::new
   1: anyhow::__private::format_err.3718
   2: rustup::toolchain::distributable::DistributableToolchain::recursion_error
   3: rustup::toolchain::Toolchain::create_command
   4: rustup::toolchain::Toolchain::command
   5: rustup::cli::proxy_mode::main::{{closure}}::{{closure}}
   6: rustup_init::run_rustup_inner::{{closure}}::{{closure}}
   7: rustup_init::run_rustup::{{closure}}::{{closure}}
   8: rustup_init::main::{{closure}}
   9: tokio::runtime::runtime::Runtime::block_on
  10: rustup_init::main
  11: std::sys::backtrace::__rust_begin_short_backtrace
  12: main
  13: __libc_start_call_main
             at ./csu/../sysdeps/nptl/libc_start_call_main.h:58:16
  14: __libc_start_main_impl
             at ./csu/../csu/libc-start.c:360:3
  15: <unknown>
TRACE
fi
exit 1
