from distgate.cli import main

main()
