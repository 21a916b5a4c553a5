"""kevent-lab's lab driver: UML hosts on virtual networks, tests, results."""
