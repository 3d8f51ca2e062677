fn main() -> std::process::ExitCode {
    scraper::cli::main()
}
