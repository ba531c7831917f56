from bigloop.cli import main

main()
