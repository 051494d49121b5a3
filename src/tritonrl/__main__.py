from tritonrl.cli import run

run()
