// CanopyPublish -- placeholder until the module lands.
import CanopyCore
