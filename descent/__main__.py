from descent.cli import main

main()
