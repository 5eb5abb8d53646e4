fn main() {
    std::process::exit(stepwise::cli::main());
}
