from kafkalab.cli import main

main()
