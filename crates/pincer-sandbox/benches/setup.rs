fn main() {
    pincer_sandbox::run_helper_if_requested();
}
